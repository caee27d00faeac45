package delta

import (
	"context"

	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/logpath"
)

// CheckpointFile is what one checkpoint or sidecar file holds, as
// ReadCheckpointFile reads it: its file actions (add, remove) and the
// others.
type CheckpointFile struct{ acts cpActions }

// ReadCheckpointFile reads one checkpoint or sidecar file, JSON or
// parquet, as log replay does. Errors name the file.
func ReadCheckpointFile(ctx context.Context, t *Table, key string) (*CheckpointFile, error) {
	acts, err := readCheckpointFile(ctx, t, key)
	if err != nil {
		return nil, err
	}
	return &CheckpointFile{acts: acts}, nil
}

// FileActions is the number of add and remove actions of the file.
func (c *CheckpointFile) FileActions() int { return len(c.acts.files) }

// Adds is the number of add actions of the file.
func (c *CheckpointFile) Adds() int64 {
	var n int64
	for _, f := range c.acts.files {
		if f.add != nil {
			n++
		}
	}
	return n
}

// Others are the file's actions other than add and remove, in file order.
func (c *CheckpointFile) Others() []actions.Action { return c.acts.others }

// Actions returns every action of the file: the others, then the file
// actions.
func (c *CheckpointFile) Actions() []actions.Action { return c.acts.actions() }

// SidecarKey resolves a sidecar action's path to its key under
// _delta_log/_sidecars/ (absolute URIs are refused).
func SidecarKey(p string) (string, error) { return sidecarKey(p) }

// ListLogFiles lists the commit, checkpoint and compaction files of the
// log in one LIST, after the log store's sync, sorted by version then key.
func ListLogFiles(ctx context.Context, t *Table) ([]logpath.File, error) { return listLog(ctx, t) }

// NewestCheckpointFiles returns the files of the newest complete
// checkpoint of the listing (one, or every part in part order), nil when
// it has none.
func (l *LogListing) NewestCheckpointFiles() []logpath.File {
	if l.newest == nil {
		return nil
	}
	return l.newest.files
}

// ReadLastCheckpoint reads _delta_log/_last_checkpoint as log replay
// does: a missing, unparseable or checksum-failing file yields (nil,
// reason); only I/O errors other than NotFound are returned as err.
func ReadLastCheckpoint(ctx context.Context, t *Table) (*logpath.LastCheckpoint, string, error) {
	return readLastCheckpoint(ctx, t)
}
