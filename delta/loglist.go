package delta

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/delta/pq"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// LogFileKind classifies a file of _delta_log/ in a LogListing.
type LogFileKind int

// Kinds of LogEntry.
const (
	LogCommit              LogFileKind = iota + 1 // NNN.json
	LogCheckpoint                                 // NNN.checkpoint.parquet (V1 or V2 content)
	LogMultiPartCheckpoint                        // NNN.checkpoint.PPP.TTT.parquet
	LogV2Checkpoint                               // NNN.checkpoint.<uuid>.json|parquet
	LogCompaction                                 // XXX.YYY.compacted.json
	LogChecksum                                   // NNN.crc
	LogSidecar                                    // _sidecars/<name>.parquet
)

// String names the kind as reports print it.
func (k LogFileKind) String() string {
	switch k {
	case LogCommit:
		return "commit"
	case LogCheckpoint:
		return "checkpoint"
	case LogMultiPartCheckpoint:
		return "multi-part checkpoint"
	case LogV2Checkpoint:
		return "v2 checkpoint"
	case LogCompaction:
		return "log compaction"
	case LogChecksum:
		return "checksum"
	case LogSidecar:
		return "sidecar"
	}
	return "unknown"
}

// MarshalText renders the kind as its name.
func (k LogFileKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText parses a kind's name.
func (k *LogFileKind) UnmarshalText(b []byte) error {
	for c := LogCommit; c <= LogSidecar; c++ {
		if c.String() == string(b) {
			*k = c
			return nil
		}
	}
	return fmt.Errorf("unknown log file kind %q", b)
}

// IsCheckpoint reports whether the kind is a checkpoint file of any naming.
func (k LogFileKind) IsCheckpoint() bool {
	return k == LogCheckpoint || k == LogMultiPartCheckpoint || k == LogV2Checkpoint
}

// LogEntry is one listed file of the log.
type LogEntry struct {
	// Key is relative to the table root ("_delta_log/...").
	Key  string      `json:"key"`
	Kind LogFileKind `json:"kind"`
	// Version is the file's version (a compaction file's end version; 0
	// for sidecars).
	Version int64 `json:"version"`
	// Start is a compaction file's first version.
	Start int64 `json:"start,omitempty"`
	// Part and Parts number a multi-part checkpoint's files.
	Part  int `json:"part,omitempty"`
	Parts int `json:"parts,omitempty"`
	// Size and ModTime come from the listing.
	Size    int64     `json:"size"`
	ModTime time.Time `json:"modTime"`
}

// LogListing is one listing of _delta_log/: commits, checkpoints of every
// naming, log compaction files and version checksums, sorted by version
// then key. Other names (_last_checkpoint, temp files) are not listed.
type LogListing struct {
	Entries  []LogEntry
	complete []int64
	// newest is the newest complete checkpoint (nil: none).
	newest *checkpoint
}

// ListLog lists the table's log in one LIST (after the log store's sync:
// see SyncLog of the DynamoDB log store).
func ListLog(ctx context.Context, t *Table) (*LogListing, error) {
	if _, err := syncLog(ctx, t); err != nil {
		return nil, fmt.Errorf("table %s: %w", t.URL, err)
	}
	var files []logpath.File
	var entries []LogEntry
	err := listFlat(ctx, t.Bucket, logpath.LogDir, func() { files, entries = nil, nil }, func(obj *blob.ListObject) {
		name := strings.TrimPrefix(obj.Key, logpath.LogDir)
		e := LogEntry{Key: obj.Key, Size: obj.Size, ModTime: obj.ModTime}
		if f, ok := logpath.Parse(name); ok {
			f.Key, f.Size, f.ModTime = obj.Key, obj.Size, obj.ModTime
			files = append(files, f)
			e.Version, e.Start, e.Part, e.Parts = f.Version, f.Start, f.Part, f.Parts
			e.Kind = map[logpath.Kind]LogFileKind{logpath.Commit: LogCommit, logpath.Checkpoint: LogCheckpoint,
				logpath.MultiPart: LogMultiPartCheckpoint, logpath.V2Checkpoint: LogV2Checkpoint, logpath.Compaction: LogCompaction}[f.Kind]
		} else if v, ok := logpath.ChecksumVersion(name); ok {
			e.Kind, e.Version = LogChecksum, v
		} else {
			return
		}
		entries = append(entries, e)
	})
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", t.URL, err)
	}
	sort.Slice(entries, func(i, j int) bool {
		if entries[i].Version != entries[j].Version {
			return entries[i].Version < entries[j].Version
		}
		return entries[i].Key < entries[j].Key
	})
	l := &LogListing{Entries: entries}
	cps, _ := checkpointsByVersion(files, nil)
	if len(cps) > 0 {
		l.newest = &cps[0]
	}
	for i := len(cps) - 1; i >= 0; i-- {
		l.complete = append(l.complete, cps[i].version)
	}
	return l, nil
}

// listFlat lists the objects directly under prefix (subdirectories are not
// descended into) through List and calls each with every one.
func listFlat(ctx context.Context, b *blob.Bucket, prefix string, reset func(), each func(*blob.ListObject)) error {
	return List(ctx, b, &blob.ListOptions{Prefix: prefix, Delimiter: "/"}, reset, func(obj *blob.ListObject) {
		if !obj.IsDir {
			each(obj)
		}
	})
}

// List lists b as opts say (nil: everything) and calls each with every object (and
// directory, under a delimiter). A local bucket's listing stats each entry
// after reading the directory, so a concurrent writer's temp file (ours,
// Spark's), renamed into place in between, fails it with NotFound; such a
// listing is started again, up to five times, with reset called before
// every start (each may have seen part of a failed one).
func List(ctx context.Context, b *blob.Bucket, opts *blob.ListOptions, reset func(), each func(*blob.ListObject)) error {
	if opts == nil {
		opts = &blob.ListOptions{}
	}
	for attempt := 1; ; attempt++ {
		reset()
		err := listOnce(ctx, b, opts, each)
		if err == nil || gcerrors.Code(err) != gcerrors.NotFound || attempt == 5 {
			return err
		}
	}
}

func listOnce(ctx context.Context, b *blob.Bucket, opts *blob.ListOptions, each func(*blob.ListObject)) error {
	it := b.List(opts)
	for {
		obj, err := it.Next(ctx)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("list %s: %w", opts.Prefix, err)
		}
		each(obj)
	}
}

// LatestCommit returns the newest commit version listed, -1 when none.
func (l *LogListing) LatestCommit() int64 {
	latest := int64(-1)
	for _, e := range l.Entries {
		if e.Kind == LogCommit {
			latest = max(latest, e.Version)
		}
	}
	return latest
}

// CompleteCheckpoints returns the versions that have a complete checkpoint
// (a single file, or every part of a multi-part set), ascending.
func (l *LogListing) CompleteCheckpoints() []int64 { return l.complete }

// NewestCheckpoint returns the newest complete checkpoint at or below
// version, or -1.
func (l *LogListing) NewestCheckpoint(version int64) int64 {
	for i := len(l.complete) - 1; i >= 0; i-- {
		if l.complete[i] <= version {
			return l.complete[i]
		}
	}
	return -1
}

// ListSidecars lists _delta_log/_sidecars/.
func ListSidecars(ctx context.Context, t *Table) ([]LogEntry, error) {
	var out []LogEntry
	err := listFlat(ctx, t.Bucket, logpath.SidecarDir, func() { out = nil }, func(obj *blob.ListObject) {
		if strings.HasSuffix(obj.Key, ".parquet") {
			out = append(out, LogEntry{Key: obj.Key, Kind: LogSidecar, Size: obj.Size, ModTime: obj.ModTime})
		}
	})
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", t.URL, err)
	}
	return out, nil
}

// CheckpointSidecars returns the keys of the sidecar files a checkpoint
// file references (none for V1 content). A parquet checkpoint without a
// sidecar column is not read beyond its footer.
func CheckpointSidecars(ctx context.Context, t *Table, key string) ([]string, error) {
	if strings.HasSuffix(key, ".parquet") {
		has, err := parquetHasColumn(ctx, t, key, actions.KindSidecar)
		if err != nil || !has {
			return nil, err
		}
	}
	acts, err := readCheckpointFile(ctx, t, key)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, a := range acts.others {
		if a.Sidecar == nil {
			continue
		}
		k, err := sidecarKey(a.Sidecar.Path)
		if err != nil {
			return nil, fmt.Errorf("table %s: checkpoint %s: %w", t.URL, key, err)
		}
		out = append(out, k)
	}
	return out, nil
}

// parquetHasColumn reads a parquet file's footer and reports whether it has
// a top-level column named name.
func parquetHasColumn(ctx context.Context, t *Table, key, name string) (bool, error) {
	attrs, err := t.Bucket.Attributes(ctx, key)
	if err != nil {
		return false, fmt.Errorf("table %s: stat %s: %w", t.URL, key, err)
	}
	f, err := pq.OpenParquet(pq.NewObjectReaderAt(ctx, t.Bucket, key, attrs.Size), attrs.Size, 0)
	if err != nil {
		return false, fmt.Errorf("table %s: checkpoint %s: %w", t.URL, key, err)
	}
	for _, fl := range f.Schema().Fields() {
		if fl.Name() == name {
			return true, nil
		}
	}
	return false, nil
}
