package delta

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// captureStdout runs f with os.Stdout redirected and returns what was
// written there. Not parallel: it swaps a process global.
func captureStdout(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	defer func() { os.Stdout = old }()
	f()
	os.Stdout = old
	w.Close()
	return <-done
}

// openTableCapturingStdout opens (and closes) the table at url and returns
// what the open wrote on stdout and its error.
func openTableCapturingStdout(t *testing.T, url string) (stdout string, err error) {
	t.Helper()
	stdout = captureStdout(t, func() {
		var tbl *Table
		if tbl, err = OpenTable(context.Background(), url); err == nil {
			tbl.Close()
		}
	})
	return stdout, err
}

func TestOpeningAGCSTableWithoutCredentialsPrintsNothingOnStdout(t *testing.T) {
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", filepath.Join(t.TempDir(), "missing.json"))
	t.Setenv("STORAGE_EMULATOR_HOST", "")
	t.Setenv("STORAGE_EMULATOR_HOST_GRPC", "")
	t.Setenv("HOME", t.TempDir())
	t.Setenv("CLOUDSDK_CONFIG", t.TempDir())
	out, openErr := openTableCapturingStdout(t, "gs://no-such-bucket-compactord/t")
	if out != "" {
		t.Errorf("opening a gs:// table wrote %q to stdout", out)
	}
	if openErr == nil || !strings.Contains(openErr.Error(), "credentials") || !strings.Contains(openErr.Error(), "anonymous=true") {
		t.Errorf("error %v does not say credentials are missing and how to go without them", openErr)
	}
}

func TestAnAnonymousGCSTableOpensWithoutLookingForCredentials(t *testing.T) {
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", filepath.Join(t.TempDir(), "missing.json"))
	t.Setenv("STORAGE_EMULATOR_HOST", "")
	t.Setenv("STORAGE_EMULATOR_HOST_GRPC", "")
	out, openErr := openTableCapturingStdout(t, "gs://public-bucket/t?anonymous=true")
	if out != "" {
		t.Errorf("opening an anonymous gs:// table wrote %q to stdout", out)
	}
	if openErr != nil {
		t.Errorf("anonymous open: %v", openErr)
	}
}

// A bucket's credentials refresh their token long after the open that looked
// them up: a canceled open context must not make every later refresh fail.
func TestGCSCredentialsStillRefreshAfterTheOpensContextEnds(t *testing.T) {
	var refreshes atomic.Int32
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		refreshes.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":"token-%d","token_type":"Bearer","expires_in":3600}`, refreshes.Load())
	}))
	defer tokens.Close()
	file := filepath.Join(t.TempDir(), "adc.json")
	adc := fmt.Sprintf(`{"type":"authorized_user","client_id":"id","client_secret":"secret","refresh_token":"refresh","token_uri":%q}`, tokens.URL)
	if err := os.WriteFile(file, []byte(adc), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", file)

	ctx, cancel := context.WithCancel(context.Background())
	creds, err := gcsCredentials(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	tok, err := creds.TokenSource.Token()
	if err != nil {
		t.Fatalf("token refresh after the open's context ended: %v", err)
	}
	if tok.AccessToken != "token-1" || refreshes.Load() != 1 {
		t.Errorf("token %q after %d refreshes, want token-1 after 1", tok.AccessToken, refreshes.Load())
	}
}
