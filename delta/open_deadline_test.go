package delta

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/objstore"
)

func TestAGCSEndpointThatNeverAnswersFailsWithinTheDeadline(t *testing.T) {
	// The GCS client retries on its own until its context ends; without a
	// deadline per call this load never returned.
	t.Setenv("STORAGE_EMULATOR_HOST", testutil.SilentEndpoint(t))
	ctx := context.Background()
	tbl, err := OpenTableWith(ctx, "gs://lake/events", OpenOptions{Store: objstore.Options{
		MetadataTimeout: 300 * time.Millisecond, OpenTimeout: 300 * time.Millisecond,
		MaxAttempts: 2, InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond,
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Close()
	done := make(chan error, 1)
	go func() {
		_, err := LoadSnapshot(ctx, tbl, -1)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "no answer within 300ms") {
			t.Fatalf("load from a silent GCS endpoint = %v, want a deadline error", err)
		}
		t.Logf("failed as it should: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("load from a silent GCS endpoint still running after 60s (deadline 2 x 300ms)")
	}
}
