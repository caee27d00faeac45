package httpapi

import (
	"errors"
	"net/http"
	"time"

	"github.com/compactord/compactord/clusteradvise"
	"github.com/compactord/compactord/scheduler"
)

// ErrNotSupported is what Daemon.Predicates returns when the daemon's
// backend keeps no clustering evidence.
var ErrNotSupported = errors.New("this daemon keeps no clustering evidence")

// maxPredicateBody bounds a POST /tables/{name}/predicates body: a full
// batch of clusteradvise.MaxPushLines lines of typical predicates.
const maxPredicateBody = 8 << 20

// postPredicates serves POST /tables/{name}/predicates: a body of JSON
// lines {"predicate": "<Spark SQL boolean expression>", "weight": n,
// "time": "<RFC 3339>"} (clusteradvise.ReadPushed), recorded whole or not
// at all.
func (d *Daemon) postPredicates(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if d.Predicates == nil {
		writeJSON(w, http.StatusNotImplemented, map[string]string{"error": ErrNotSupported.Error()})
		return
	}
	batch, err := clusteradvise.ReadPushed(http.MaxBytesReader(w, r.Body, maxPredicateBody), time.Now().UTC())
	if err != nil {
		status := http.StatusBadRequest
		if mb := (*http.MaxBytesError)(nil); errors.As(err, &mb) {
			status = http.StatusRequestEntityTooLarge
		}
		writeJSON(w, status, map[string]string{"error": err.Error()})
		return
	}
	kept, err := d.Predicates(r.Context(), name, batch)
	switch {
	case err == nil:
		d.Log.Info("POST predicates: recorded", "table", name, "predicates", len(batch), "kept", kept)
		writeJSON(w, http.StatusOK, map[string]any{"table": name, "recorded": len(batch), "kept": kept})
	case errors.Is(err, scheduler.ErrUnknownTable):
		writeJSON(w, http.StatusNotFound, map[string]string{"error": err.Error()})
	case errors.Is(err, ErrNotSupported):
		writeJSON(w, http.StatusNotImplemented, map[string]string{"error": err.Error()})
	default:
		d.Log.Warn("POST predicates: not recorded", "table", name, "error", err)
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
	}
}
