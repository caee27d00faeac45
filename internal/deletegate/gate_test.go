package deletegate

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"gocloud.dev/blob/fileblob"
)

func TestCheck(t *testing.T) {
	g := New(nil, Options{Referenced: func(k string) bool { return k == "live.parquet" }})
	cases := []struct {
		key  string
		kind Kind
		ok   bool
	}{
		{"part-0.parquet", Data, true},
		{"p=1/part-0.parquet", Data, true},
		{"deletion_vector_0b8f1a7e-7f3c-4a35-9d8b-1f1c4b7f7e7e.bin", Data, true},
		{"_change_data/cdc-0.parquet", Data, true},
		{"live.parquet", Data, false},
		{"./part-0.parquet", Data, false},
		{"a//part-0.parquet", Data, false},
		{"a/../part-0.parquet", Data, false},
		{"../outside.parquet", Data, false},
		{"/part-0.parquet", Data, false},
		{"", Data, false},
		{"_delta_log/00000000000000000000.json", Data, false},
		{"_DELTA_LOG/00000000000000000000.json", Data, false},
		{"_delta_log/_last_checkpoint", Data, false},
		{"_compactord/attempts/x.json", Data, false},
		{"_delta_log/00000000000000000000.json", Log, true},
		{"_delta_log/00000000000000000003.crc", Log, true},
		{"_delta_log/00000000000000000010.checkpoint.parquet", Log, true},
		{"_delta_log/00000000000000000010.checkpoint.0000000001.0000000002.parquet", Log, true},
		{"_delta_log/00000000000000000010.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.json", Log, true},
		{"_delta_log/00000000000000000001.00000000000000000004.compacted.json", Log, true},
		{"_delta_log/_sidecars/016ae953-37a9-438e-8683-9a9a4a79a395.parquet", Log, true},
		{"_delta_log/_last_checkpoint", Log, false},
		{"_delta_log/_last_vacuum_info", Log, false},
		{"_delta_log/.tmp/00000000000000000001.json", Log, false},
		{"part-0.parquet", Log, false},
		{"_delta_log/.00000000000000000001.json.1234.tmp", Temp, true},
		{"_delta_log/.tmp/.00000000000000000001.json.1234.tmp", Temp, false},
		{"_delta_log/00000000000000000001.json", Temp, false},
		{"part-0.parquet.18a2b3c4.tmp", Temp, true},
		{"_compactord/attempts/x.json.99.tmp", Temp, true},
		{"_compactord/attempts/x.json", Record, true},
		{"_compactord/plans/p1/plan.json", Record, true},
		{"part-0.parquet", Record, false},
		{"_delta_log/00000000000000000000.json", Record, false},
		{"part-0.parquet", Output, true},
		{"_compactord/plans/p1/unit-0/origins-a-0.bin", Output, true},
		{"_delta_log/00000000000000000000.json", Output, false},
		{"./part-0.parquet", Output, false},
	}
	for _, c := range cases {
		if got := g.Check(c.key, c.kind) == ""; got != c.ok {
			t.Errorf("Check(%q, %v) allowed = %v, want %v (%s)", c.key, c.kind, got, c.ok, g.Check(c.key, c.kind))
		}
	}
}

func TestDeleteRefusesSymlinkedPaths(t *testing.T) {
	ctx := context.Background()
	root, outside := t.TempDir(), t.TempDir()
	sentinel := filepath.Join(outside, "sentinel.parquet")
	if err := os.WriteFile(sentinel, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "linked")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(sentinel, filepath.Join(root, "link.parquet")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "own.parquet"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := fileblob.OpenBucket(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	g := New(b, Options{Table: "file://" + root, LocalRoot: root})
	for _, k := range []string{"linked/sentinel.parquet", "link.parquet"} {
		if err := g.Delete(ctx, k, Data); !errors.Is(err, ErrRefused) {
			t.Errorf("Delete(%q) = %v, want ErrRefused", k, err)
		}
	}
	if _, err := os.Stat(sentinel); err != nil {
		t.Fatalf("the file outside the table is gone: %v", err)
	}
	if err := g.Delete(ctx, "own.parquet", Data); err != nil {
		t.Fatalf("Delete(own.parquet) = %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "own.parquet")); !os.IsNotExist(err) {
		t.Fatalf("own.parquet still there: %v", err)
	}
	if g.Refused() != 2 {
		t.Fatalf("Refused() = %d, want 2", g.Refused())
	}
}

func TestLocalRootOf(t *testing.T) {
	for in, want := range map[string]string{
		"file:///data/t": "/data/t", "file://localhost/data/t": "/data/t", "s3://b/t": "", "mem://x": "", "file://host/x": "",
		"file:///data/a%5Eb%20c": "/data/a^b c",
	} {
		if got := LocalRootOf(in); got != filepath.FromSlash(want) {
			t.Errorf("LocalRootOf(%q) = %q, want %q", in, got, want)
		}
	}
}
