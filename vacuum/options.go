package vacuum

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/compactord/compactord/commit"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/internal/progress"
)

// Mode is the kind of vacuum.
type Mode string

// The modes (Spark's VacuumType).
const (
	// Lite deletes the files of tombstones that expired since the last
	// vacuum, found in the commits, without listing data directories.
	Lite Mode = "lite"
	// Full lists the table root and deletes everything unreferenced and
	// older than the cutoff.
	Full Mode = "full"
)

// ParseMode reads "lite" or "full".
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case Lite, Full:
		return Mode(s), nil
	}
	return "", fmt.Errorf("vacuum mode %q: want lite or full", s)
}

// Options configure one vacuum. The zero value is a full vacuum with the
// table's retention.
type Options struct {
	// Mode is lite or full (default full, as Spark).
	Mode Mode
	// Retention overrides the table's delta.deletedFileRetentionDuration
	// when positive. A retention shorter than the table's is refused unless
	// ForceRetention is set.
	Retention time.Duration
	// ZeroRetention asks for a retention of exactly 0 (Spark's RETAIN 0
	// HOURS); it needs ForceRetention like any shorter retention.
	ZeroRetention bool
	// ForceRetention allows a retention shorter than the table's (Spark's
	// retentionDurationCheck.enabled=false); a warning is logged.
	ForceRetention bool
	// DryRun lists what would be deleted (OnFile, Result) and deletes and
	// commits nothing.
	DryRun bool
	// Concurrency bounds the deletes in flight (default 16).
	Concurrency int
	// OnFile, when set, is called for every file (and directory) the run
	// deletes or, on a dry run, would delete. Calls are sequential.
	OnFile func(File)
	// SpillDir holds the full mode's candidate list while the START commit
	// is written (default os.TempDir()); the list is never kept in memory.
	SpillDir string
	// NoCommitInfo skips the VACUUM START / END commits (Spark skips them
	// on some stores unless vacuum logging is enabled).
	NoCommitInfo bool
	// EngineInfo goes into commitInfo.engineInfo.
	EngineInfo string
	// Commit tunes the START/END commits (Now and Logger default to this
	// run's).
	Commit commit.Options
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger receives progress and the retention warning (default null).
	Logger hclog.Logger
	// Snapshots loads the latest snapshot (default delta.LoadSnapshot).
	Snapshots func(ctx context.Context, t *delta.Table, version int64) (*delta.Snapshot, error)
	// Progress, when set, receives the deletes' progress: files and bytes
	// deleted (or found gone, or failed) of those to delete (phase
	// "delete"; a dry run deletes nothing and reports none).
	Progress progress.Func
}

func (o Options) withDefaults() Options {
	if o.Mode == "" {
		o.Mode = Full
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 16
	}
	if o.SpillDir == "" {
		o.SpillDir = os.TempDir()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.Snapshots == nil {
		o.Snapshots = delta.LoadSnapshot
	}
	o.Commit = o.Commit.Inherit(o.Now, o.Logger, o.EngineInfo)
	return o
}

// File is one object a vacuum deletes (or would).
type File struct {
	// Key is the object key relative to the table root (a directory ends
	// in "/").
	Key string `json:"path"`
	// Size is its size in bytes (0 for directories; the remove's size in
	// lite mode, which may be unknown and then 0).
	Size int64 `json:"size"`
	// Kind says why it goes: "expired" (a tombstone's file or DV that left
	// the window), "orphan" (named by nothing the snapshot knows), "temp"
	// (a temp leftover of a killed write), "dir" (an empty directory).
	Kind string `json:"kind"`
}

// File kinds.
const (
	KindExpired = "expired"
	KindOrphan  = "orphan"
	KindTemp    = "temp"
	KindDir     = "dir"
)

// Result is what one vacuum did; `compactord vacuum --json` prints it.
type Result struct {
	// Table is the table URL.
	Table string `json:"table"`
	// Mode is lite or full.
	Mode Mode `json:"mode"`
	// DryRun is set when nothing was deleted.
	DryRun bool `json:"dryRun"`
	// ReadVersion is the snapshot the valid set came from.
	ReadVersion int64 `json:"readVersion"`
	// RetentionMillis is the retention used; DefaultRetentionMillis the
	// table's.
	RetentionMillis        int64 `json:"retentionMillis"`
	DefaultRetentionMillis int64 `json:"defaultRetentionMillis"`
	// Cutoff is now - retention: only files older than it (tombstones
	// deleted before it) are deleted.
	Cutoff time.Time `json:"cutoff"`
	// EligibleStartVersion and EligibleEndVersion bound the commits a lite
	// vacuum read (-1 when none).
	EligibleStartVersion int64 `json:"eligibleStartVersion"`
	EligibleEndVersion   int64 `json:"eligibleEndVersion"`
	// FilesToDelete and BytesToDelete are what the run found eligible
	// (Spark's numFilesToDelete / sizeOfDataToDelete; directories count as
	// files, as in Spark).
	FilesToDelete int64 `json:"numFilesToDelete"`
	BytesToDelete int64 `json:"sizeOfDataToDelete"`
	// FilesDeleted and BytesDeleted are what was really deleted (objects
	// already gone are not counted); DirsDeleted the empty directories
	// removed.
	FilesDeleted int64 `json:"numDeletedFiles"`
	BytesDeleted int64 `json:"bytesDeleted"`
	DirsDeleted  int64 `json:"numDeletedDirectories"`
	// Directories is Spark's numVacuumedDirectories: the directories seen,
	// plus one for the root.
	Directories int64 `json:"numVacuumedDirectories"`
	// Orphans counts eligible files that no action of the snapshot names
	// (written but never committed, or tombstones already dropped from a
	// checkpoint); TempFiles the temp leftovers among them.
	Orphans   int64 `json:"orphans"`
	TempFiles int64 `json:"tempFiles"`
	// StartVersion and EndVersion are the VACUUM START / END commits (-1
	// when none was written).
	StartVersion int64 `json:"startVersion"`
	EndVersion   int64 `json:"endVersion"`
	// ProtectedFiles counts the files the retention still keeps: the
	// data files of tombstones removed at or after Cutoff (not live
	// again) and, in a full vacuum, the files no version inside the
	// window needs that were modified at or after Cutoff
	// (ProtectedUnreferenced of them: an expired tombstone's file or an
	// orphan written, or copied, inside the retention). Why a vacuum soon
	// after a compaction deletes nothing. ProtectedUntil is when the first
	// of them leaves the window (nil when none).
	ProtectedFiles        int64      `json:"protectedFiles"`
	ProtectedUnreferenced int64      `json:"protectedUnreferenced,omitempty"`
	ProtectedUntil        *time.Time `json:"protectedUntil,omitempty"`
	// DeleteErrors counts deletes that failed (the run then fails too).
	DeleteErrors int64 `json:"deleteErrors"`
	// DeletesRefused counts the candidates the deletion gate refused (see
	// package deletegate: each is logged with its reason, none fails the
	// run).
	DeletesRefused int64 `json:"deletesRefused,omitempty"`
}
