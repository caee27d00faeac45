package testutil

import (
	"io"
	"net/http"
	"testing"
)

// Get fetches url and returns the answer's status code and body; a request
// that gets no answer fails the test.
func Get(t testing.TB, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
