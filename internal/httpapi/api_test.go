package httpapi

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// TestRecoverPanicsLeavesErrAbortHandlerAlone checks that an aborted
// response stays aborted (net/http's own meaning), not a 500.
func TestRecoverPanicsLeavesErrAbortHandlerAlone(t *testing.T) {
	h := recoverPanics(hclog.NewNullLogger(), http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) }))
	defer func() {
		if p := recover(); p != http.ErrAbortHandler {
			t.Fatalf("recovered %v, want http.ErrAbortHandler re-panicked", p)
		}
	}()
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
}
