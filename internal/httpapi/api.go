package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"sort"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/compactord/compactord/clusteradvise"
	"github.com/compactord/compactord/events"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/scheduler"
)

// StatusPage is the JSON of GET /status.
type StatusPage struct {
	Version      string    `json:"version"`
	Started      time.Time `json:"started"`
	Policies     string    `json:"policies"`
	LastReload   time.Time `json:"last_reload"`
	ReloadError  string    `json:"reload_error,omitempty"`
	Stopping     bool      `json:"stopping"`
	Workers      int       `json:"workers"`
	Replica      string    `json:"replica,omitempty"`
	PollInterval string    `json:"poll_interval"`
	// Queue lists the runs waiting for a worker, next first (filled here
	// from Tables).
	Queue []QueueEntry `json:"queue"`
	// Events is the change-event subscription (absent when off).
	Events *EventsStatus           `json:"events,omitempty"`
	Tables []scheduler.TableStatus `json:"tables"`
}

// QueueEntry is one table waiting in the fleet queue.
type QueueEntry struct {
	Table string `json:"table"`
	scheduler.Queued
	// QuotaOccupation is the table's worker time in the last hour over
	// its quota.
	QuotaOccupation float64 `json:"quota_occupation"`
}

// queueOf lists the waiting tables of ts in queue order.
func queueOf(ts []scheduler.TableStatus) []QueueEntry {
	q := []QueueEntry{}
	for _, t := range ts {
		if t.Fleet.Queued != nil {
			q = append(q, QueueEntry{Table: t.Name, Queued: *t.Fleet.Queued, QuotaOccupation: t.Fleet.QuotaOccupation})
		}
	}
	sort.SliceStable(q, func(i, j int) bool { return q[i].Position < q[j].Position })
	return q
}

// EventsStatus is the change-event subscription in /status: where it reads
// (redacted), the reconciling poll, and what became of the notifications.
type EventsStatus struct {
	URL               string `json:"url"`
	ReconcileInterval string `json:"reconcile_interval"`
	events.Stats
}

// Daemon is what the API reads and asks of the running daemon.
type Daemon struct {
	// Version is the daemon's version (/status, compactord_build_info).
	Version string
	// Log receives the API's own lines (reloads, panics).
	Log hclog.Logger
	// Token is the bearer token of the mutating endpoints off loopback
	// ("" when none: they are refused there).
	Token string
	// Hosts are the names, besides localhost and the loopback addresses,
	// that a loopback listener answers to (AllowedHosts).
	Hosts map[string]bool
	// Page is the daemon's part of /status (Tables is filled here).
	Page func() StatusPage
	// Stopping tells whether the daemon shuts down (/readyz).
	Stopping func() bool
	// Counters are the process-wide counters of /metrics.
	Counters func() Counters
	// Tables is the scheduler's status of every table.
	Tables func() []scheduler.TableStatus
	// Policy is a table's loaded policy.
	Policy func(name string) (policies.Policy, bool)
	// Plan is a dry run with the real planner; the result is JSON-encoded.
	Plan func(ctx context.Context, p policies.Policy, exclude map[string]bool) (any, error)
	// Trigger runs a table now (scheduler.Trigger).
	Trigger func(name, reason string) error
	// Reload re-reads the policy directory.
	Reload func() error
	// Resume clears a table's halt (scheduler.Resume).
	Resume func(name string) error
	// Predicates records pushed predicates in a table's clustering
	// evidence and returns how many distinct predicates the table keeps;
	// an error wrapping scheduler.ErrUnknownTable is a 404, ErrNotSupported
	// a 501. May be nil (501).
	Predicates func(ctx context.Context, name string, batch []clusteradvise.Pushed) (int, error)
	// Mount adds more routes (the HTML view). May be nil.
	Mount func(mux *http.ServeMux)
}

// Handler serves /metrics, /healthz, /readyz, /status, the plan preview,
// the on-demand run and reload endpoints, and what d.Mount adds. loopback
// tells whether the listener is on loopback only (see security.go): then
// every request passes the Host check.
func Handler(d *Daemon, loopback bool) http.Handler {
	h := recoverPanics(d.Log, d.routes(loopback))
	if !loopback {
		return h
	}
	return hostGuard(d.Hosts, h)
}

func (d *Daemon) routes(loopback bool) *http.ServeMux {
	guard := newMutationGuard(loopback, d.Token)
	mux := http.NewServeMux()
	if d.Mount != nil {
		d.Mount(mux)
	}
	mux.Handle("GET /metrics", metricsHandler(d.Version, d.Tables, d.Counters, func(table string) time.Duration {
		p, ok := d.Policy(table)
		if !ok {
			return 0
		}
		return p.Triggers.MaxTimeSinceLastRun
	}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if d.Stopping() {
			http.Error(w, "shutting down", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		page := d.Page()
		page.Tables = d.Tables()
		page.Queue = queueOf(page.Tables)
		writeJSON(w, http.StatusOK, page)
	})
	mux.HandleFunc("GET /tables/{name}/plan", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		p, ok := d.Policy(name)
		if !ok {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such table: " + name})
			return
		}
		var exclude map[string]bool
		for _, st := range d.Tables() {
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
		pl, err := d.Plan(r.Context(), p, exclude)
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, pl)
	})
	mux.Handle("POST /reload", guard.wrap(func(w http.ResponseWriter, r *http.Request) {
		d.Log.Info("POST /reload: reloading policies")
		if err := d.Reload(); err != nil {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "reloaded"})
	}))
	mux.Handle("POST /tables/{name}/resume", guard.wrap(func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		err := d.Resume(name)
		switch {
		case err == nil:
			d.Log.Info("POST resume: halt cleared", "table", name)
			writeJSON(w, http.StatusOK, map[string]string{"table": name, "status": "resumed"})
		case errors.Is(err, scheduler.ErrUnknownTable):
			writeJSON(w, http.StatusNotFound, map[string]string{"error": err.Error()})
		case errors.Is(err, scheduler.ErrNotHalted):
			writeJSON(w, http.StatusOK, map[string]string{"table": name, "status": "not halted"})
		default: // scheduler.ErrPolicyInvalid: only a corrected policy helps
			writeJSON(w, http.StatusConflict, map[string]string{"error": err.Error() + ": correct the policy file, then reload (SIGHUP or POST /reload)"})
		}
	}))
	mux.Handle("POST /tables/{name}/predicates", guard.wrap(func(w http.ResponseWriter, r *http.Request) {
		d.postPredicates(w, r)
	}))
	mux.Handle("POST /tables/{name}/run", guard.wrap(func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		err := d.Trigger(name, scheduler.ReasonAPI)
		switch {
		case err == nil:
			writeJSON(w, http.StatusAccepted, map[string]string{"table": name, "status": "triggered"})
		case errors.Is(err, scheduler.ErrUnknownTable):
			writeJSON(w, http.StatusNotFound, map[string]string{"error": err.Error()})
		case errors.Is(err, scheduler.ErrHalted):
			body := map[string]string{"error": err.Error()}
			for _, st := range d.Tables() {
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
