package checkpointwrite

import (
	"context"
	"fmt"
	"strings"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/logpath"
)

// LastCheckpointRepair says what RepairLastCheckpoint rewrote.
type LastCheckpointRepair struct {
	// Version is the checkpoint _last_checkpoint names now.
	Version int64 `json:"version"`
	// Was is the version it named before (-1: missing or unreadable).
	Was int64 `json:"was"`
	// Key is the checkpoint's (first) file, relative to the table root.
	Key string `json:"key"`
}

// RepairLastCheckpoint points _delta_log/_last_checkpoint at the newest
// complete checkpoint of the log when it names an older one, is missing,
// or is corrupt: what is left when a writer's checkpoint landed and
// its _last_checkpoint write did not. The document is the one a writer
// writes (version, size, sizeInBytes, numOfAddFiles, parts of a
// multi-part checkpoint, v2Checkpoint of a UUID-named one, checksum),
// rebuilt by reading the checkpoint's files and sidecars once.
//
// It never moves the hint back: _last_checkpoint is read again after the
// checkpoint and only replaced when it still names an older version (a
// concurrent writer's newer hint wins; one landing in the instant between
// that read and the write is overwritten, and the next repair restores
// it, since its checkpoint exists). l is a listing of the log (nil: listed
// here). It returns nil when nothing was rewritten.
func RepairLastCheckpoint(ctx context.Context, t *delta.Table, l *delta.LogListing) (*LastCheckpointRepair, error) {
	if l == nil || (l.NewestCheckpointFiles() == nil && len(l.CompleteCheckpoints()) > 0) {
		var err error
		if l, err = delta.ListLog(ctx, t); err != nil {
			return nil, err
		}
	}
	files := l.NewestCheckpointFiles()
	if files == nil {
		return nil, nil
	}
	cp := checkpoint{version: files[0].Version, files: files}
	// Of a version checkpointed under several names, the hint names the
	// UUID-named V2 file as Spark's does (every name holds the same state).
	for _, e := range l.Entries {
		if e.Version == cp.version && e.Kind == delta.LogV2Checkpoint {
			cp.files = []logpath.File{{Key: e.Key, Kind: logpath.V2Checkpoint, Version: e.Version, Size: e.Size, ModTime: e.ModTime}}
			break
		}
	}
	was, err := delta.LastCheckpointVersion(ctx, t)
	if err != nil || was >= cp.version {
		return nil, err
	}
	lc, err := lastCheckpointOf(ctx, t, cp)
	if err != nil {
		return nil, err
	}
	ok, err := writeLastCheckpointIf(ctx, t, lc, func(cur int64) bool { return cur < lc.Version })
	if err != nil || !ok {
		return nil, err
	}
	return &LastCheckpointRepair{Version: cp.version, Was: was, Key: cp.files[0].Key}, nil
}

// lastCheckpointOf rebuilds the _last_checkpoint document of cp as
// WriteCheckpoint writes it.
func lastCheckpointOf(ctx context.Context, t *delta.Table, cp checkpoint) (*logpath.LastCheckpointOut, error) {
	lc := &logpath.LastCheckpointOut{Version: cp.version}
	var top *delta.CheckpointFile
	var sidecars []actions.Sidecar
	for _, f := range cp.files {
		acts, err := delta.ReadCheckpointFile(ctx, t, f.Key)
		if err != nil {
			return nil, err
		}
		lc.Size += int64(acts.FileActions() + len(acts.Others()))
		lc.SizeInBytes += f.Size
		lc.NumOfAddFiles += acts.Adds()
		for _, a := range acts.Others() {
			if a.Sidecar != nil {
				sidecars = append(sidecars, *a.Sidecar)
			}
		}
		top = acts
	}
	if len(cp.files) > 1 {
		parts := len(cp.files)
		lc.Parts = &parts
	}
	for _, sc := range sidecars {
		key, err := delta.SidecarKey(sc.Path)
		if err != nil {
			return nil, fmt.Errorf("table %s: checkpoint %d: %w", t.URL, cp.version, err)
		}
		acts, err := delta.ReadCheckpointFile(ctx, t, key)
		if err != nil {
			return nil, err
		}
		lc.Size += int64(acts.FileActions())
		lc.SizeInBytes += sc.SizeInBytes
		lc.NumOfAddFiles += acts.Adds()
	}
	if f := cp.files[0]; f.Kind == logpath.V2Checkpoint {
		lv2 := &logpath.LastV2{Path: strings.TrimPrefix(f.Key, logpath.LogDir), SizeInBytes: f.Size, ModificationTime: f.ModTime.UnixMilli()}
		// As the writer inlines them: the non-file actions, then
		// checkpointMetadata.
		var nonFile []actions.Action
		var cm *actions.CheckpointMetadata
		for _, a := range top.Others() {
			switch {
			case a.Sidecar != nil:
			case a.CheckpointMetadata != nil:
				cm = a.CheckpointMetadata
			default:
				nonFile = append(nonFile, a)
			}
		}
		if cm != nil {
			nonFile = append(nonFile, actions.Action{CheckpointMetadata: cm})
		}
		if len(nonFile) <= lastCheckpointInlineLimit {
			lv2.NonFileActions = &nonFile
		}
		if len(sidecars) <= lastCheckpointInlineLimit {
			sc := append([]actions.Sidecar{}, sidecars...)
			lv2.SidecarFiles = &sc
		}
		lc.V2Checkpoint = lv2
	}
	return lc, nil
}

// checkpoint is one complete checkpoint: its version and its files (one,
// or every part in part order).
type checkpoint struct {
	version int64
	files   []logpath.File
}
