package fanout

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
)

// ProcessLauncher runs each unit as a local `compactord run-unit` child
// process, the way Kubernetes' Indexed Job controller runs pods: the unit
// index in JOB_COMPLETION_INDEX (a decimal string), at most Parallelism at
// once, a unit exiting ExitRetry (or any code but ExitUsage, ExitQuarantine
// and ExitHalt) or killed by a signal started again up to
// BackoffLimitPerIndex times, never one that exited ExitUsage,
// ExitQuarantine or ExitHalt (podFailurePolicy FailIndex).
type ProcessLauncher struct {
	// Binary is the compactord executable (default os.Executable()).
	Binary string
	// Args are more flags after `run-unit --plan URL` (e.g. --log-level).
	Args []string
	// Env is added to the launcher's own environment for every worker.
	Env []string
	// Stderr receives the workers' stderr (default: discarded; the last
	// lines of a failed attempt are in its UnitStatus.Reason either way).
	Stderr io.Writer
	// Logger receives starts, exits and restarts (default: null logger).
	Logger hclog.Logger
	// StopGrace is how long a worker has after SIGTERM (sent when ctx ends)
	// before it is killed (default 10s).
	StopGrace time.Duration
}

var _ Launcher = (*ProcessLauncher)(nil)

// NewProcessLauncher is the ProcessLauncher of compactord's own runs (the
// run-plan command's --executor process, the daemon's executor "process"
// blocks): workers of binary (empty: this executable) at --log-level warn
// with args after it, their starts, exits and restarts logged to log, and
// every line of their stderr (their log lines, the error they exit with)
// logged to log as a warning "worker: LINE" with the worker's plan, table
// and unit index (a nil log: a null logger).
func NewProcessLauncher(binary string, log hclog.Logger, args ...string) *ProcessLauncher {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return &ProcessLauncher{Binary: binary, Logger: log, Args: append([]string{"--log-level", "warn"}, args...), Stderr: logStderr{log}}
}

// logStderr passes the workers' stderr on to a logger, a warning a line.
type logStderr struct{ log hclog.Logger }

// forUnit is w for the worker of unit i of spec: its lines carry the plan,
// the table and the unit, so that lines of workers running at once can be
// told apart.
func (w logStderr) forUnit(spec LaunchSpec, i int) logStderr {
	return logStderr{log: w.log.With("plan", spec.PlanID, "table", spec.Table, "unit", i)}
}

func (w logStderr) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		if line != "" {
			w.log.Warn("worker: " + line)
		}
	}
	return len(p), nil
}

// Launch implements Launcher.
func (p *ProcessLauncher) Launch(ctx context.Context, spec LaunchSpec, report func(UnitStatus)) error {
	bin := p.Binary
	if bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("process launcher: find compactord binary: %w", err)
		}
		bin = exe
	}
	log := p.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	if spec.Units < 0 || spec.PlanURL == "" {
		return fmt.Errorf("process launcher: bad spec (%d units, plan %q)", spec.Units, spec.PlanURL)
	}
	par := max(spec.Parallelism, 1)
	var (
		mu    sync.Mutex // serializes report
		errMu sync.Mutex // serializes the workers' writes to p.Stderr
		wg    sync.WaitGroup
	)
	sem := make(chan struct{}, par)
	for i := 0; i < spec.Units; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				mu.Lock()
				report(UnitStatus{Index: i, ExitCode: -1, Reason: "not started: " + ctx.Err().Error()})
				mu.Unlock()
				return
			}
			st := p.runUnit(ctx, bin, spec, i, log, &errMu)
			<-sem
			mu.Lock()
			report(st)
			mu.Unlock()
		}(i)
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("process launcher: plan %s: %w", spec.PlanID, err)
	}
	return nil
}

// runUnit runs the attempts of unit i until one is final.
func (p *ProcessLauncher) runUnit(ctx context.Context, bin string, spec LaunchSpec, i int, log hclog.Logger, mu *sync.Mutex) UnitStatus {
	st := UnitStatus{Index: i, ExitCode: -1}
	for {
		st.Attempts++
		code, reason, err := p.attempt(ctx, bin, spec, i, mu)
		st.ExitCode = code
		switch {
		case err != nil:
			st.Reason = err.Error()
			return st
		case code == ExitOK:
			st.Succeeded, st.Reason = true, ""
			return st
		}
		st.Reason = reason
		if ctx.Err() != nil {
			st.Reason = "stopped: " + ctx.Err().Error() + "; " + reason
			return st
		}
		if code == ExitUsage || code == ExitQuarantine || code == ExitHalt {
			log.Warn("unit failed, not retried", "plan", spec.PlanID, "unit", i, "exit", code, "reason", reason)
			return st
		}
		if st.Attempts > spec.BackoffLimitPerIndex {
			log.Warn("unit failed, backoff limit reached", "plan", spec.PlanID, "unit", i, "attempts", st.Attempts, "reason", reason)
			return st
		}
		log.Info("unit attempt failed, starting it again", "plan", spec.PlanID, "unit", i, "attempt", st.Attempts, "exit", code, "reason", reason)
	}
}

// attempt runs one worker process: its exit code (-1 when a signal ended
// it), the tail of its stderr, and an error when it could not be started.
func (p *ProcessLauncher) attempt(ctx context.Context, bin string, spec LaunchSpec, i int, mu *sync.Mutex) (int, string, error) {
	args := append([]string{"run-unit", "--plan", spec.PlanURL}, p.Args...)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(append(os.Environ(), p.Env...), IndexEnv+"="+strconv.Itoa(i))
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = p.StopGrace
	if cmd.WaitDelay <= 0 {
		cmd.WaitDelay = 10 * time.Second
	}
	tail := &tailBuffer{max: 4 << 10}
	cmd.Stderr = tail
	if p.Stderr != nil {
		w := p.Stderr
		if ls, ok := w.(logStderr); ok {
			w = ls.forUnit(spec, i)
		}
		cmd.Stderr = io.MultiWriter(tail, &lockedWriter{mu: mu, w: w})
	}
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return ExitOK, "", nil
	case errors.As(err, &ee):
		reason := strings.TrimSpace(tail.String())
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return -1, fmt.Sprintf("killed by %v; %s", ws.Signal(), reason), nil
		}
		return ee.ExitCode(), fmt.Sprintf("exit %d: %s", ee.ExitCode(), reason), nil
	case ctx.Err() != nil:
		return -1, "stopped", nil
	}
	return -1, "", fmt.Errorf("start worker for unit %d: %w", i, err)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append([]byte(nil), t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// lockedWriter serializes writes of several workers to one writer.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
