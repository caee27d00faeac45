package delta

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/compactord/compactord/delta/logstore"
	"github.com/compactord/compactord/internal/testutil"
)

// raceLogStore has `writers` goroutines race to create each of `versions`
// commits and checks that exactly one wins each version and that the
// stored bytes are the winner's, whole.
func raceLogStore(t *testing.T, tbl *Table, writers, versions int) {
	t.Helper()
	ctx := context.Background()
	for v := 0; v < versions; v++ {
		key := fmt.Sprintf("_delta_log/%020d.json", v)
		winners, errs := testutil.Race(writers, func(w int) error {
			return tbl.Log.PutIfAbsent(ctx, key, commitBody(v, w))
		}, func(err error) bool { return errors.Is(err, logstore.ErrCommitExists) })
		if len(errs) > 0 {
			t.Fatalf("version %d: unexpected errors: %v", v, errs)
		}
		if len(winners) != 1 {
			t.Fatalf("version %d: %d winners %v, want exactly 1", v, len(winners), winners)
		}
		got, err := tbl.Bucket.ReadAll(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if want := commitBody(v, winners[0]); string(got) != string(want) {
			t.Fatalf("version %d: stored %d bytes that are not the winner's (writer %d)", v, len(got), winners[0])
		}
	}
}

// commitBody is a distinct, multi-kilobyte body per writer so a torn or
// overwritten file is detected.
func commitBody(v, w int) []byte {
	line := fmt.Sprintf(`{"commitInfo":{"txnId":"v%d-w%d"}}`+"\n", v, w)
	return []byte(strings.Repeat(line, 200))
}

func TestLogStoreExactlyOneWinnerPerVersion(t *testing.T) {
	tests := []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"file", func(t *testing.T) string { return "file://" + filepath.ToSlash(t.TempDir()) }},
		{"mem", func(t *testing.T) string { return "mem://race" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tbl, err := OpenTable(context.Background(), tc.url(t))
			if err != nil {
				t.Fatal(err)
			}
			defer tbl.Close()
			raceLogStore(t, tbl, 16, 40)
		})
	}
}

func TestLocalLogStoreLeavesNoTempFiles(t *testing.T) {
	dir := t.TempDir()
	tbl, err := OpenTable(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Close()
	raceLogStore(t, tbl, 8, 5)
	entries, err := os.ReadDir(filepath.Join(dir, "_delta_log"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 5 {
		t.Fatalf("_delta_log holds %v, want only the 5 commits", names)
	}
}

func TestLocalLogStoreRejectsKeysOutsideTheTable(t *testing.T) {
	s := logstore.NewLocal(t.TempDir())
	for _, key := range []string{"", "/etc/passwd", "../x.json", "_delta_log/../../x", "a//b"} {
		if err := s.PutIfAbsent(context.Background(), key, []byte("x")); err == nil {
			t.Errorf("PutIfAbsent(%q) succeeded, want an error", key)
		}
	}
}

// TestOpenTableRefusesDynamoDBParamsWithoutTheLogStore checks the refusal
// reaches OpenTable's caller (a policy's url goes the same way).
func TestOpenTableRefusesDynamoDBParamsWithoutTheLogStore(t *testing.T) {
	_, err := OpenTable(context.Background(), "s3://b/t?region=us-east-1&dynamodb_table=commits")
	if err == nil || !strings.Contains(err.Error(), "without log_store=dynamodb") {
		t.Fatalf("OpenTable = %v, want a refusal naming log_store=dynamodb", err)
	}
}
