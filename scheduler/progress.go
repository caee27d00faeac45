package scheduler

import (
	"time"

	"github.com/compactord/compactord/internal/progress"
)

// setProgress records the running operation's progress for /status.
func (t *table[P]) setProgress(p progress.Progress) {
	t.mu.Lock()
	t.progress = &p
	t.mu.Unlock()
}

// logProgress logs the progress of operation op every
// Config.ProgressLogInterval until the returned stop is called, which also
// forgets the progress: it is the running operation's only.
func (t *table[P]) logProgress(op string) (stop func()) {
	done := make(chan struct{})
	exited := make(chan struct{})
	// The first timer is armed before the operation starts.
	tm := t.s.cfg.Clock.NewTimer(t.s.cfg.ProgressLogInterval)
	go func() {
		defer close(exited)
		for {
			select {
			case <-done:
				tm.Stop()
				return
			case <-tm.C():
			}
			tm = t.s.cfg.Clock.NewTimer(t.s.cfg.ProgressLogInterval)
			t.mu.Lock()
			p := t.progress
			t.mu.Unlock()
			if p == nil {
				continue
			}
			elapsed := t.s.cfg.Clock.Now().Sub(p.Started)
			name := p.Op
			if name == "" {
				name = op
			}
			args := []any{"table", t.spec.Name, "op", name, "phase", p.Phase, "files", p.Files, "files_total", p.FilesTotal,
				"bytes", p.Bytes, "bytes_total", p.BytesTotal, "started_at", p.Started.UTC().Format(time.RFC3339), "elapsed", elapsed.Round(time.Second)}
			if f := p.Fraction(); f > 0 && f < 1 && elapsed > 0 {
				eta := time.Duration(float64(elapsed) * (1 - f) / f)
				args = append(args, "percent", int(f*100), "eta", eta.Round(time.Second))
			}
			t.log().Info("run progress", args...)
		}
	}()
	return func() {
		close(done)
		<-exited
		t.mu.Lock()
		t.progress = nil
		t.mu.Unlock()
	}
}
