package delta

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
	"golang.org/x/sync/errgroup"

	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/failure"
)

// lastCheckpointKey is the checkpoint hint file.
const lastCheckpointKey = LogDir + "_last_checkpoint"

// lastCheckpoint is the content of _delta_log/_last_checkpoint that log
// replay uses: a hint, never trusted over the listing.
type lastCheckpoint struct {
	Version  int64  `json:"version"`
	Parts    *int   `json:"parts,omitempty"`
	Checksum string `json:"checksum,omitempty"`
	V2       *struct {
		Path string `json:"path"`
	} `json:"v2Checkpoint,omitempty"`
}

// readLastCheckpoint reads the hint. A missing, unparseable or checksum-
// failing file yields (nil, reason) so that the caller falls back to the
// listing; only I/O errors other than NotFound are returned as err.
func readLastCheckpoint(ctx context.Context, t *Table) (*lastCheckpoint, string, error) {
	data, _, err := readBounded(ctx, t.Bucket, lastCheckpointKey, t.limits().LastCheckpoint, "LastCheckpoint")
	var tl *TooLargeError
	switch {
	case errors.As(err, &tl):
		return nil, fmt.Sprintf("corrupt: %v", err), nil
	case gcerrors.Code(err) == gcerrors.NotFound:
		return nil, "missing", nil
	case err != nil:
		return nil, "", fmt.Errorf("table %s: read %s: %w", t.URL, lastCheckpointKey, err)
	}
	var lc lastCheckpoint
	if err := json.Unmarshal(data, &lc); err != nil {
		return nil, fmt.Sprintf("corrupt: %v", err), nil
	}
	if lc.Checksum != "" {
		sum, err := lastCheckpointChecksum(data)
		if err != nil {
			return nil, fmt.Sprintf("corrupt: %v", err), nil
		}
		if sum != lc.Checksum {
			return nil, fmt.Sprintf("checksum mismatch (file says %s, content is %s)", lc.Checksum, sum), nil
		}
	}
	return &lc, "", nil
}

// lastCheckpointChecksum computes the checksum of a _last_checkpoint
// document as the protocol defines it: the JSON is flattened into
// path=value pairs (object keys quoted and URL-encoded, array indexes bare,
// path parts joined by '+', string values quoted and URL-encoded, other
// values as written), the pairs are sorted by path bytes and joined with
// ',', the top-level "checksum" is skipped, and the result is MD5-hashed.
func lastCheckpointChecksum(doc []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var root map[string]any
	if err := dec.Decode(&root); err != nil {
		return "", err
	}
	delete(root, "checksum")
	type pair struct{ path, value string }
	var pairs []pair
	var walk func(path string, v any)
	walk = func(path string, v any) {
		join := func(part string) string {
			if path == "" {
				return part
			}
			return path + "+" + part
		}
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				walk(join(`"`+checksumEscape(k)+`"`), e)
			}
		case []any:
			for i, e := range x {
				walk(join(fmt.Sprint(i)), e)
			}
		case string:
			pairs = append(pairs, pair{path, `"` + checksumEscape(x) + `"`})
		case json.Number:
			pairs = append(pairs, pair{path, string(x)})
		case bool:
			pairs = append(pairs, pair{path, fmt.Sprint(x)})
		case nil:
			pairs = append(pairs, pair{path, "null"})
		}
	}
	walk("", root)
	sort.Slice(pairs, func(i, j int) bool { return pairs[i].path < pairs[j].path })
	var sb strings.Builder
	for i, p := range pairs {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(p.path)
		sb.WriteByte('=')
		sb.WriteString(p.value)
	}
	sum := md5.Sum([]byte(sb.String()))
	return hex.EncodeToString(sum[:]), nil
}

// checksumEscape percent-encodes every UTF-8 byte except A-Za-z0-9-._~
// with uppercase hex.
func checksumEscape(s string) string {
	const hexDigits = "0123456789ABCDEF"
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			sb.WriteByte(c)
			continue
		}
		sb.WriteByte('%')
		sb.WriteByte(hexDigits[c>>4])
		sb.WriteByte(hexDigits[c&15])
	}
	return sb.String()
}

// checkpoint is one complete checkpoint found in the listing.
type checkpoint struct {
	version int64
	files   []logFile // one file, or all parts in part order
}

// checkpointsByVersion groups the listed checkpoint files into complete
// checkpoints, newest first. Incomplete multi-part sets are dropped and
// reported in incomplete (by version) so that errors can mention them.
func checkpointsByVersion(files []logFile, hint *lastCheckpoint) (complete []checkpoint, incomplete map[int64]string) {
	type multiKey struct {
		version int64
		parts   int
	}
	multi := map[multiKey][]logFile{}
	singles := map[int64][]logFile{}
	for _, f := range files {
		switch f.kind {
		case fileCheckpoint, fileV2Checkpoint:
			singles[f.version] = append(singles[f.version], f)
		case fileMultiPart:
			k := multiKey{f.version, f.parts}
			multi[k] = append(multi[k], f)
		}
	}
	incomplete = map[int64]string{}
	byVersion := map[int64]checkpoint{}
	for k, parts := range multi {
		have := make([]logFile, k.parts)
		n := 0
		for _, p := range parts {
			if have[p.part-1].key == "" {
				have[p.part-1] = p
				n++
			}
		}
		if n != k.parts {
			var missing []string
			for i, p := range have {
				if p.key == "" {
					missing = append(missing, fmt.Sprintf("%s%020d.checkpoint.%010d.%010d.parquet", LogDir, k.version, i+1, k.parts))
				}
			}
			incomplete[k.version] = "incomplete multi-part checkpoint, missing " + strings.Join(missing, ", ")
			continue
		}
		byVersion[k.version] = checkpoint{version: k.version, files: have}
	}
	for v, fs := range singles {
		// Prefer the file the hint names, then a classic name, then the
		// first UUID-named file: any complete checkpoint of a version holds
		// the same state.
		best := fs[0]
		for _, f := range fs {
			if hint != nil && hint.V2 != nil && hint.Version == v && f.key == LogDir+hint.V2.Path {
				best = f
				break
			}
			if f.kind == fileCheckpoint {
				best = f
			}
		}
		byVersion[v] = checkpoint{version: v, files: []logFile{best}}
	}
	for _, c := range byVersion {
		complete = append(complete, c)
	}
	sort.Slice(complete, func(i, j int) bool { return complete[i].version > complete[j].version })
	return complete, incomplete
}

// readCheckpoint reads every action of a checkpoint: all parts, and the
// sidecars that V2 content (under any name) references, in parallel. The
// sidecar actions are not among the result's.
func readCheckpoint(ctx context.Context, t *Table, cp checkpoint) (cpActions, error) {
	results := make([]cpActions, len(cp.files))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for i, f := range cp.files {
		g.Go(func() error {
			acts, err := readCheckpointFile(gctx, t, f.key)
			results[i] = acts
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return cpActions{}, err
	}
	var sidecars []*actions.Sidecar
	for _, r := range results {
		for _, a := range r.others {
			if a.Sidecar != nil {
				sidecars = append(sidecars, a.Sidecar)
			}
		}
	}
	if len(results) == 1 && len(sidecars) == 0 {
		return results[0], nil // a classic checkpoint: no copy
	}
	side := make([]cpActions, len(sidecars))
	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(4)
	for i, sc := range sidecars {
		g.Go(func() error {
			key, err := sidecarKey(sc.Path)
			if err != nil {
				return fmt.Errorf("table %s: checkpoint %d: %w", t.URL, cp.version, err)
			}
			acts, err := readCheckpointFile(gctx, t, key)
			if err != nil {
				return err
			}
			if len(acts.others) > 0 {
				return fmt.Errorf("table %s: sidecar %s holds a %s action; sidecars may hold only add and remove", t.URL, key, acts.others[0].Kind())
			}
			side[i] = acts
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return cpActions{}, err
	}
	parts := append(results, side...)
	nFiles := 0
	for _, r := range parts {
		nFiles += len(r.files)
	}
	all := cpActions{files: make([]fileEntry, 0, nFiles)}
	for _, r := range parts {
		all.files = append(all.files, r.files...)
		for _, a := range r.others {
			if a.Sidecar == nil {
				all.others = append(all.others, a)
			}
		}
	}
	return all, nil
}

// sidecarKey resolves a sidecar action path: a file name relative to
// _delta_log/_sidecars/. Absolute URIs are refused (this build reads
// sidecars only inside the table).
func sidecarKey(p string) (string, error) {
	if strings.Contains(p, "://") {
		return "", fmt.Errorf("sidecar path %q: absolute sidecar URIs are not supported", p)
	}
	name, err := actions.DecodePath(p)
	if err != nil {
		return "", err
	}
	return sidecarDir + name, nil
}

// readCheckpointFile reads one checkpoint or sidecar file, JSON or parquet.
// Errors name the file.
func readCheckpointFile(ctx context.Context, t *Table, key string) (cpActions, error) {
	data, err := readWhole(ctx, t.Bucket, key)
	if err != nil {
		if gcerrors.Code(err) == gcerrors.NotFound {
			return cpActions{}, fmt.Errorf("table %s: checkpoint file %s is missing: %w", t.URL, key, err)
		}
		return cpActions{}, fmt.Errorf("table %s: read %s: %w", t.URL, key, err)
	}
	var acts cpActions
	if strings.HasSuffix(key, ".json") {
		var lines []actions.Action
		if lines, err = parseActionLines(data, t.limits().LogLine); err == nil {
			for _, a := range lines {
				acts.take(a)
			}
			err = checkCheckpointStats(acts.files)
		}
	} else {
		acts, err = parseCheckpointParquet(data)
	}
	if err != nil {
		kind := failure.Checkpoint
		if strings.HasPrefix(key, sidecarDir) {
			kind = failure.Sidecar
		}
		return cpActions{}, fmt.Errorf("table %s: %w", t.URL, corruptLog(kind, key, err))
	}
	return acts, nil
}

// checkCheckpointStats checks the stats of the adds of a JSON checkpoint
// file (the parquet decoder checks its own as it reads them).
func checkCheckpointStats(files []fileEntry) error {
	for _, f := range files {
		if a := f.add; a != nil {
			if err := checkAddStats(a); err != nil {
				return err
			}
		}
	}
	return nil
}

// LastCheckpointVersion returns the version _delta_log/_last_checkpoint
// names, or -1 when it is missing, corrupt or fails its checksum.
func LastCheckpointVersion(ctx context.Context, t *Table) (int64, error) {
	lc, _, err := readLastCheckpoint(ctx, t)
	if err != nil || lc == nil {
		return -1, err
	}
	return lc.Version, nil
}

// readWhole reads an object into a buffer of its size (Bucket.ReadAll
// grows one by doubling: a checkpoint of a million files is copied and
// cleared several times over).
func readWhole(ctx context.Context, b *blob.Bucket, key string) ([]byte, error) {
	r, err := b.NewReader(ctx, key, nil)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var buf bytes.Buffer
	// One read past the size meets the end of the object without growing.
	buf.Grow(int(max(r.Size(), 0)) + bytes.MinRead)
	if _, err := buf.ReadFrom(r); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
