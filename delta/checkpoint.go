package delta

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
	"golang.org/x/sync/errgroup"

	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/delta/logstore"
	"github.com/compactord/compactord/failure"
)

// readLastCheckpoint reads the hint. A missing, unparseable or checksum-
// failing file yields (nil, reason) so that the caller falls back to the
// listing; only I/O errors other than NotFound are returned as err.
func readLastCheckpoint(ctx context.Context, t *Table) (*logpath.LastCheckpoint, string, error) {
	data, _, err := logstore.ReadBounded(ctx, t.Bucket, logpath.LastCheckpointKey, t.limits().LastCheckpoint, "LastCheckpoint")
	var tl *logstore.TooLargeError
	switch {
	case errors.As(err, &tl):
		return nil, fmt.Sprintf("corrupt: %v", err), nil
	case gcerrors.Code(err) == gcerrors.NotFound:
		return nil, "missing", nil
	case err != nil:
		return nil, "", fmt.Errorf("table %s: read %s: %w", t.URL, logpath.LastCheckpointKey, err)
	}
	var lc logpath.LastCheckpoint
	if err := json.Unmarshal(data, &lc); err != nil {
		return nil, fmt.Sprintf("corrupt: %v", err), nil
	}
	if lc.Checksum != "" {
		sum, err := logpath.Checksum(data)
		if err != nil {
			return nil, fmt.Sprintf("corrupt: %v", err), nil
		}
		if sum != lc.Checksum {
			return nil, fmt.Sprintf("checksum mismatch (file says %s, content is %s)", lc.Checksum, sum), nil
		}
	}
	return &lc, "", nil
}

// checkpoint is one complete checkpoint found in the listing.
type checkpoint struct {
	version int64
	files   []logpath.File // one file, or all parts in part order
}

// checkpointsByVersion groups the listed checkpoint files into complete
// checkpoints, newest first. Incomplete multi-part sets are dropped and
// reported in incomplete (by version) so that errors can mention them.
func checkpointsByVersion(files []logpath.File, hint *logpath.LastCheckpoint) (complete []checkpoint, incomplete map[int64]string) {
	type multiKey struct {
		version int64
		parts   int
	}
	multi := map[multiKey][]logpath.File{}
	singles := map[int64][]logpath.File{}
	for _, f := range files {
		switch f.Kind {
		case logpath.Checkpoint, logpath.V2Checkpoint:
			singles[f.Version] = append(singles[f.Version], f)
		case logpath.MultiPart:
			k := multiKey{f.Version, f.Parts}
			multi[k] = append(multi[k], f)
		}
	}
	incomplete = map[int64]string{}
	byVersion := map[int64]checkpoint{}
	for k, parts := range multi {
		have := make([]logpath.File, k.parts)
		n := 0
		for _, p := range parts {
			if have[p.Part-1].Key == "" {
				have[p.Part-1] = p
				n++
			}
		}
		if n != k.parts {
			var missing []string
			for i, p := range have {
				if p.Key == "" {
					missing = append(missing, fmt.Sprintf("%s%020d.checkpoint.%010d.%010d.parquet", logpath.LogDir, k.version, i+1, k.parts))
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
			if hint != nil && hint.V2 != nil && hint.Version == v && f.Key == logpath.LogDir+hint.V2.Path {
				best = f
				break
			}
			if f.Kind == logpath.Checkpoint {
				best = f
			}
		}
		byVersion[v] = checkpoint{version: v, files: []logpath.File{best}}
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
			acts, err := readCheckpointFile(gctx, t, f.Key)
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
	return logpath.SidecarDir + name, nil
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
		if strings.HasPrefix(key, logpath.SidecarDir) {
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
