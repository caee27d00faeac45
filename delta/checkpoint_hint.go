package delta

import (
	"context"
	"fmt"
	"strings"

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
func RepairLastCheckpoint(ctx context.Context, t *Table, l *LogListing) (*LastCheckpointRepair, error) {
	if l == nil || (l.newest == nil && len(l.complete) > 0) {
		var err error
		if l, err = ListLog(ctx, t); err != nil {
			return nil, err
		}
	}
	if l.newest == nil {
		return nil, nil
	}
	cp := *l.newest
	// Of a version checkpointed under several names, the hint names the
	// UUID-named V2 file as Spark's does (every name holds the same state).
	for _, e := range l.Entries {
		if e.Version == cp.version && e.Kind == LogV2Checkpoint {
			cp.files = []logpath.File{{Key: e.Key, Kind: logpath.V2Checkpoint, Version: e.Version, Size: e.Size, ModTime: e.ModTime}}
			break
		}
	}
	was, err := hintVersion(ctx, t)
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

// hintVersion is the version _last_checkpoint names, -1 when it is
// missing, corrupt or fails its checksum (as for every reader of the hint,
// and for WriteCheckpoint, which replaces such a file).
func hintVersion(ctx context.Context, t *Table) (int64, error) {
	lc, _, err := readLastCheckpoint(ctx, t)
	if err != nil || lc == nil {
		return -1, err
	}
	return lc.Version, nil
}

// lastCheckpointOf rebuilds the _last_checkpoint document of cp as
// WriteCheckpoint writes it.
func lastCheckpointOf(ctx context.Context, t *Table, cp checkpoint) (*logpath.LastCheckpointOut, error) {
	lc := &logpath.LastCheckpointOut{Version: cp.version}
	var top cpActions
	var sidecars []actions.Sidecar
	for _, f := range cp.files {
		acts, err := readCheckpointFile(ctx, t, f.Key)
		if err != nil {
			return nil, err
		}
		lc.Size += int64(len(acts.files) + len(acts.others))
		lc.SizeInBytes += f.Size
		lc.NumOfAddFiles += countAdds(acts.files)
		for _, a := range acts.others {
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
		key, err := sidecarKey(sc.Path)
		if err != nil {
			return nil, fmt.Errorf("table %s: checkpoint %d: %w", t.URL, cp.version, err)
		}
		acts, err := readCheckpointFile(ctx, t, key)
		if err != nil {
			return nil, err
		}
		lc.Size += int64(len(acts.files))
		lc.SizeInBytes += sc.SizeInBytes
		lc.NumOfAddFiles += countAdds(acts.files)
	}
	if f := cp.files[0]; f.Kind == logpath.V2Checkpoint {
		lv2 := &logpath.LastV2{Path: strings.TrimPrefix(f.Key, logpath.LogDir), SizeInBytes: f.Size, ModificationTime: f.ModTime.UnixMilli()}
		// As the writer inlines them: the non-file actions, then
		// checkpointMetadata.
		var nonFile []actions.Action
		var cm *actions.CheckpointMetadata
		for _, a := range top.others {
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

func countAdds(files []fileEntry) int64 {
	var n int64
	for _, f := range files {
		if f.add != nil {
			n++
		}
	}
	return n
}
