package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/compactord/compactord/scheduler"
)

// statusPage is the JSON of GET /status.
type statusPage struct {
	Version      string                  `json:"version"`
	Started      time.Time               `json:"started"`
	Policies     string                  `json:"policies"`
	LastReload   time.Time               `json:"last_reload"`
	ReloadError  string                  `json:"reload_error,omitempty"`
	Stopping     bool                    `json:"stopping"`
	Workers      int                     `json:"workers"`
	Replica      string                  `json:"replica,omitempty"`
	PollInterval string                  `json:"poll_interval"`
	Tables       []scheduler.TableStatus `json:"tables"`
}

// handler serves /metrics, /healthz, /readyz, /status, the plan preview,
// the on-demand run and reload endpoints. loopback tells whether the
// listener is on loopback only (see httpsec.go): then every request passes
// the Host check.
func (d *daemon) handler(loopback bool) http.Handler {
	h := recoverPanics(d.log, d.routes(loopback))
	if !loopback {
		return h
	}
	return hostGuard(d.hosts, h)
}

func (d *daemon) routes(loopback bool) *http.ServeMux {
	guard := newMutationGuard(loopback, d.token)
	mux := http.NewServeMux()
	d.webHandlers(mux)
	mux.Handle("GET /metrics", metricsHandler(d.sched.Status, func() daemonCounters {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.counters
	}, func(table string) time.Duration {
		p, ok := d.sched.Policy(table)
		if !ok {
			return 0
		}
		return p.Triggers.MaxTimeSinceLastRun
	}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if d.stopping.Load() {
			http.Error(w, "shutting down", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		page := statusPage{
			Version: version, Started: d.started, Policies: d.opts.PolicyDir,
			LastReload: d.reloaded, ReloadError: d.loadErr, Stopping: d.stopping.Load(),
			Workers: d.daemon.Workers, Replica: d.daemon.Replica, PollInterval: d.daemon.Poll.String(),
		}
		d.mu.Unlock()
		page.Tables = d.sched.Status()
		writeJSON(w, http.StatusOK, page)
	})
	mux.HandleFunc("GET /tables/{name}/plan", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		p, ok := d.sched.Policy(name)
		if !ok {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such table: " + name})
			return
		}
		var exclude map[string]bool
		for _, st := range d.sched.Status() {
			if st.Name == name && st.Halted {
				// Planning a halted table would meet what halted it.
				writeJSON(w, http.StatusConflict, haltBody(st))
				return
			}
			if st.Name == name && len(st.Quarantined) > 0 {
				exclude = map[string]bool{}
				for _, q := range st.Quarantined {
					exclude[q] = true
				}
			}
		}
		pl, err := d.be.Plan(r.Context(), p, exclude)
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, pl)
	})
	mux.Handle("POST /reload", guard.wrap(func(w http.ResponseWriter, r *http.Request) {
		d.log.Info("POST /reload: reloading policies")
		if err := d.reload(); err != nil {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "reloaded"})
	}))
	mux.Handle("POST /tables/{name}/resume", guard.wrap(func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		err := d.sched.Resume(name)
		switch {
		case err == nil:
			d.log.Info("POST resume: halt cleared", "table", name)
			writeJSON(w, http.StatusOK, map[string]string{"table": name, "status": "resumed"})
		case errors.Is(err, scheduler.ErrUnknownTable):
			writeJSON(w, http.StatusNotFound, map[string]string{"error": err.Error()})
		case errors.Is(err, scheduler.ErrNotHalted):
			writeJSON(w, http.StatusOK, map[string]string{"table": name, "status": "not halted"})
		default: // scheduler.ErrPolicyInvalid: only a corrected policy helps
			writeJSON(w, http.StatusConflict, map[string]string{"error": err.Error() + ": correct the policy file, then reload (SIGHUP or POST /reload)"})
		}
	}))
	mux.Handle("POST /tables/{name}/run", guard.wrap(func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		err := d.sched.Trigger(name, scheduler.ReasonAPI)
		switch {
		case err == nil:
			writeJSON(w, http.StatusAccepted, map[string]string{"table": name, "status": "triggered"})
		case errors.Is(err, scheduler.ErrUnknownTable):
			writeJSON(w, http.StatusNotFound, map[string]string{"error": err.Error()})
		case errors.Is(err, scheduler.ErrHalted):
			body := map[string]string{"error": err.Error()}
			for _, st := range d.sched.Status() {
				if st.Name == name {
					body = haltBody(st)
				}
			}
			writeJSON(w, http.StatusConflict, body)
		case errors.Is(err, scheduler.ErrDisabled):
			writeJSON(w, http.StatusConflict, map[string]string{"error": err.Error()})
		default:
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
		}
	}))
	return mux
}

// recoverPanics answers 500 for a request whose handler panics and logs
// the panic with the request's method and path and the handler's frames,
// so that no request reaches the process's fate: net/http recovers a
// panicking handler too, but only drops the connection and writes to its
// own logger. The log line carries the panic's type, its message only for
// a runtime error (made by the runtime, of numbers and type names), and
// function names and lines only: never argument words or a value that may
// hold what a handler read from a table. http.ErrAbortHandler keeps its
// meaning (abort the response, silently).
func recoverPanics(log hclog.Logger, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			p := recover()
			if p == nil {
				return
			}
			if p == http.ErrAbortHandler {
				panic(p)
			}
			what := fmt.Sprintf("%T", p)
			if re, ok := p.(runtime.Error); ok {
				what = re.Error()
			}
			log.Error("http handler panicked", "method", r.Method, "path", r.URL.Path, "panic", what, "frames", panicFrames())
			http.Error(w, "internal error", http.StatusInternalServerError)
		}()
		h.ServeHTTP(w, r)
	})
}

// panicFrames lists the functions (and lines) of the panicking goroutine,
// innermost first, from within a deferred recover.
func panicFrames() []string {
	pcs := make([]uintptr, 32)
	n := runtime.Callers(3, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	var out []string
	for {
		f, more := frames.Next()
		out = append(out, fmt.Sprintf("%s:%d", f.Function, f.Line))
		if !more {
			return out
		}
	}
}

// haltBody is the 409 answer for a halted table: what and why.
func haltBody(st scheduler.TableStatus) map[string]string {
	return map[string]string{
		"error":       fmt.Sprintf("table %s is halted: %s; %s", st.Name, st.HaltReason, scheduler.HaltAdvice(st.Name)),
		"table":       st.Name,
		"halt_reason": st.HaltReason,
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}
