package progressbar

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	pb "github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/compactord/compactord/internal/progress"
	"github.com/compactord/compactord/internal/units"
)

// progressLogInterval is how often a command off a terminal logs the
// progress of a phase (besides its start and its end).
const progressLogInterval = 5 * time.Second

// CLI shows a command's operation progress: a bar on stderr when
// stdout and stderr are both terminals and the output is not --json;
// otherwise "progress" log lines at info level on stderr (seen with
// --log-level info or -v), at a phase's start, every
// progressLogInterval, and at its end. stdout is never written.
type CLI struct {
	stderr io.Writer
	log    hclog.Logger
	bar    bool // draw a bar (else log)

	mu      sync.Mutex
	cur     progress.Progress // the phase shown
	b       *pb.ProgressBar
	lastLog time.Time
	pending bool // cur holds counts not logged yet
}

// New decides how a command shows progress.
func New(stdout, stderr io.Writer, asJSON bool, log hclog.Logger) *CLI {
	return &CLI{stderr: stderr, log: log, bar: !asJSON && isTerminal(stdout) && isTerminal(stderr)}
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Func is the progress.Func to give the operation.
func (c *CLI) Func() progress.Func { return c.update }

func (c *CLI) update(p progress.Progress) {
	c.mu.Lock()
	defer c.mu.Unlock()
	newPhase := p.Op != c.cur.Op || p.Phase != c.cur.Phase || !p.Started.Equal(c.cur.Started)
	if newPhase {
		c.endPhase()
	}
	c.cur = p
	if c.bar {
		c.draw(p, newPhase)
		return
	}
	now := time.Now()
	c.pending = true
	if newPhase || now.Sub(c.lastLog) >= progressLogInterval || Done(p) {
		c.logLine(p, now)
	}
}

// done reports whether p has reached its known totals.
// Done reports whether p counts all of its totals (a phase at its end).
func Done(p progress.Progress) bool {
	return (p.FilesTotal > 0 || p.BytesTotal > 0) && p.Files == p.FilesTotal && p.Bytes == p.BytesTotal
}

func (c *CLI) logLine(p progress.Progress, now time.Time) {
	c.lastLog, c.pending = now, false
	elapsed := now.Sub(p.Started)
	args := []any{"op", p.Op, "phase", p.Phase, "files", p.Files, "files_total", p.FilesTotal,
		"bytes", p.Bytes, "bytes_total", p.BytesTotal, "elapsed", elapsed.Round(time.Millisecond)}
	if f := p.Fraction(); f > 0 && elapsed > 0 {
		args = append(args, "percent", int(f*100), "rate", units.FormatBytes(int64(float64(p.Bytes)/elapsed.Seconds()))+"/s")
		if f < 1 {
			args = append(args, "eta", time.Duration(float64(elapsed)*(1-f)/f).Round(time.Second))
		}
	}
	c.log.Info("progress", args...)
}

// draw renders p on the bar, starting a new one for a new phase.
func (c *CLI) draw(p progress.Progress, newPhase bool) {
	if newPhase {
		max, opts := p.BytesTotal, []pb.Option{
			pb.OptionSetWriter(c.stderr),
			pb.OptionSetWidth(30),
			pb.OptionThrottle(100 * time.Millisecond),
			pb.OptionSetPredictTime(true),
			pb.OptionSetElapsedTime(true),
			pb.OptionShowElapsedTimeOnFinish(),
			pb.OptionSetRenderBlankState(true),
		}
		if max <= 0 {
			max = p.FilesTotal
			opts = append(opts, pb.OptionShowCount(), pb.OptionSetItsString("files"), pb.OptionShowIts())
		}
		if max <= 0 {
			max = -1 // a spinner: nothing to count
		}
		opts = append(opts, pb.OptionSetDescription(describe(p)))
		c.b = pb.NewOptions64(max, opts...)
	}
	c.b.Describe(describe(p))
	if p.BytesTotal > 0 {
		_ = c.b.Set64(p.Bytes)
	} else {
		_ = c.b.Set64(p.Files)
	}
}

// describe is the bar's label: operation, phase, files done and, when
// the phase counts bytes, bytes done of total and the rate, in the one
// human size format (units.FormatBytes), not the bar library's own.
func describe(p progress.Progress) string {
	s := fmt.Sprintf("%s %s: %d/%d files", p.Op, p.Phase, p.Files, p.FilesTotal)
	if p.BytesTotal <= 0 {
		return s
	}
	s += ", " + units.FormatBytes(p.Bytes) + " of " + units.FormatBytes(p.BytesTotal)
	if elapsed := time.Since(p.Started).Seconds(); elapsed > 0 && !p.Started.IsZero() {
		s += ", " + units.FormatBytes(int64(float64(p.Bytes)/elapsed)) + "/s"
	}
	return s
}

// endPhase finishes the phase shown (its bar ends with a new line; off a
// terminal its last counts are logged unless they were).
func (c *CLI) endPhase() {
	if c.cur.Op == "" {
		return
	}
	if c.b != nil {
		if Done(c.cur) {
			_ = c.b.Finish()
		} else {
			_ = c.b.Exit()
		}
		fmt.Fprintln(c.stderr)
		c.b = nil
	} else if c.pending {
		c.logLine(c.cur, time.Now())
	}
	c.cur = progress.Progress{}
}

// Finish ends the display; call it when the operation returned, before
// the command prints its report. A nil *CLI does nothing.
func (c *CLI) Finish() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.endPhase()
}
