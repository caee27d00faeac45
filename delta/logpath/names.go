package logpath

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ErrVersionNotFound is wrapped by errors about a table version that does
// not exist (no commit file, or a version beyond the latest).
var ErrVersionNotFound = errors.New("table version not found")

// LogDir is the key prefix of the Delta log inside a table.
const LogDir = "_delta_log/"

// SidecarDir is the key prefix of V2 checkpoint sidecar files.
const SidecarDir = LogDir + "_sidecars/"

// CommitKey returns the object key of the commit file of version v,
// "_delta_log/%020d.json".
func CommitKey(v int64) string { return fmt.Sprintf("%s%020d.json", LogDir, v) }

// CheckpointKey returns the object key of the classic checkpoint file of
// version v, "_delta_log/%020d.checkpoint.parquet".
func CheckpointKey(v int64) string { return fmt.Sprintf("%s%020d.checkpoint.parquet", LogDir, v) }

// Kind classifies a file in _delta_log/.
type Kind int

// Kinds of File.
const (
	Commit       Kind = iota + 1 // NNN.json
	Checkpoint                   // NNN.checkpoint.parquet (classic, V1 or V2 content)
	MultiPart                    // NNN.checkpoint.PPP.TTT.parquet
	V2Checkpoint                 // NNN.checkpoint.<uuid>.json|parquet
	Compaction                   // XXX.YYY.compacted.json
)

// File is one listed file of the log.
type File struct {
	// Key is the object key, relative to the table root (set by the lister).
	Key  string
	Kind Kind
	// Version is the commit/checkpoint version; for compaction files the
	// end version.
	Version int64
	// Start is a compaction file's first version covered.
	Start int64
	// Part is a multi-part checkpoint file's 1-based part number.
	Part int
	// Parts is a multi-part checkpoint's number of parts.
	Parts int
	// Size and ModTime come from the listing.
	Size    int64
	ModTime time.Time
}

// Parse classifies a file name (without the _delta_log/ prefix).
// ok is false for files that are not commits, checkpoints or compaction
// files (_last_checkpoint, .crc, temp files...).
func Parse(name string) (f File, ok bool) {
	if len(name) < 21 || name[20] != '.' {
		return f, false
	}
	v, err := strconv.ParseInt(name[:20], 10, 64)
	if err != nil || v < 0 {
		return f, false
	}
	f.Version = v
	rest := name[21:]
	switch {
	case rest == "json":
		f.Kind = Commit
		return f, true
	case rest == "checkpoint.parquet":
		f.Kind = Checkpoint
		return f, true
	case strings.HasPrefix(rest, "checkpoint."):
		mid := strings.TrimPrefix(rest, "checkpoint.")
		if p, ok := strings.CutSuffix(mid, ".parquet"); ok && len(p) == 21 && p[10] == '.' {
			part, err1 := strconv.Atoi(p[:10])
			parts, err2 := strconv.Atoi(p[11:])
			if err1 == nil && err2 == nil && part >= 1 && part <= parts {
				f.Kind, f.Part, f.Parts = MultiPart, part, parts
				return f, true
			}
			return f, false
		}
		for _, ext := range []string{".json", ".parquet"} {
			if id, ok := strings.CutSuffix(mid, ext); ok && id != "" && !strings.Contains(id, ".") {
				f.Kind = V2Checkpoint
				return f, true
			}
		}
	case strings.HasSuffix(rest, ".compacted.json") && len(rest) == 20+len(".compacted.json"):
		end, err := strconv.ParseInt(rest[:20], 10, 64)
		if err == nil && end >= v {
			f.Kind, f.Start, f.Version = Compaction, v, end
			return f, true
		}
	}
	return f, false
}

// ChecksumVersion parses "%020d.crc".
func ChecksumVersion(name string) (int64, bool) {
	if len(name) != 24 || !strings.HasSuffix(name, ".crc") {
		return 0, false
	}
	v, err := strconv.ParseInt(name[:20], 10, 64)
	return v, err == nil && v >= 0
}
