package progress

import (
	"sync"
	"time"
)

// Progress is how far one phase of an operation is. A total of 0 means
// not known; Files and Bytes never exceed their known totals.
type Progress struct {
	// Op names the operation ("compaction", "retention", "vacuum",
	// "checkpoint").
	Op string `json:"op"`
	// Phase names the step of the operation the counts are of ("rewrite",
	// "scan", "delete", "write").
	Phase string `json:"phase"`
	// Files and FilesTotal count the files (or, for a checkpoint, file
	// actions) done and to do.
	Files      int64 `json:"files"`
	FilesTotal int64 `json:"files_total"`
	// Bytes and BytesTotal are the bytes of those files.
	Bytes      int64 `json:"bytes"`
	BytesTotal int64 `json:"bytes_total"`
	// Started is when the phase started.
	Started time.Time `json:"started_at"`
}

// Fraction is the share done, by bytes when their total is known, else by
// files; 0 when neither total is known.
func (p Progress) Fraction() float64 {
	switch {
	case p.BytesTotal > 0:
		return float64(p.Bytes) / float64(p.BytesTotal)
	case p.FilesTotal > 0:
		return float64(p.Files) / float64(p.FilesTotal)
	}
	return 0
}

// Func receives an operation's progress: once when a phase starts, then
// at every change. A Tracker calls it from one goroutine at a time, but
// not always the same one; it must return quickly.
type Func func(Progress)

// Tracker counts one phase's progress and reports each change to its Func.
// A nil *Tracker (what Start returns for a nil Func) does nothing, so an
// operation reports unconditionally.
type Tracker struct {
	fn Func
	mu sync.Mutex
	p  Progress
}

// Start begins a phase of op with the given totals (0: unknown) at now and
// reports it. It returns nil when fn is nil.
func Start(fn Func, op, phase string, filesTotal, bytesTotal int64, now time.Time) *Tracker {
	if fn == nil {
		return nil
	}
	t := &Tracker{fn: fn, p: Progress{Op: op, Phase: phase, FilesTotal: filesTotal, BytesTotal: bytesTotal, Started: now}}
	fn(t.p)
	return t
}

// Add counts files and bytes more done and reports the new counts.
func (t *Tracker) Add(files, bytes int64) {
	if t == nil || files == 0 && bytes == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.p.Files = clamp(t.p.Files+files, t.p.FilesTotal)
	t.p.Bytes = clamp(t.p.Bytes+bytes, t.p.BytesTotal)
	t.fn(t.p)
}

// Set sets the counts done and reports them when they changed.
func (t *Tracker) Set(files, bytes int64) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	files, bytes = clamp(files, t.p.FilesTotal), clamp(bytes, t.p.BytesTotal)
	if files == t.p.Files && bytes == t.p.Bytes {
		return
	}
	t.p.Files, t.p.Bytes = files, bytes
	t.fn(t.p)
}

// Progress returns the current counts.
func (t *Tracker) Progress() Progress {
	if t == nil {
		return Progress{}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.p
}

func clamp(n, total int64) int64 {
	if total > 0 && n > total {
		return total
	}
	return n
}
