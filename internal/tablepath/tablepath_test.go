package tablepath

import (
	"errors"
	"testing"
)

func TestResolve(t *testing.T) {
	cases := []struct {
		root, path string
		key        string // "" with outside: resolves outside
		outside    bool
		err        error
	}{
		{"s3://b/tbl", "part-0.parquet", "part-0.parquet", false, nil},
		{"s3://b/tbl", "./part-0.parquet", "part-0.parquet", false, nil},
		{"s3://b/tbl", "a/../part-0.parquet", "part-0.parquet", false, nil},
		{"s3://b/tbl", "a//b/./c", "a/b/c", false, nil},
		{"s3://b/tbl", "%5Fdelta_log/00000000000000000000.json", "_delta_log/00000000000000000000.json", false, nil},
		{"s3://b/tbl", "%5fdelta_log/x.json", "_delta_log/x.json", false, nil},
		{"s3://b/tbl", "./_delta_log/x.json", "_delta_log/x.json", false, nil},
		{"s3://b/tbl", "%2e%2e/other/x", "", true, nil},
		{"s3://b/tbl", "%2E%2E%2Fother/x", "", true, nil},
		{"s3://b/tbl", "a/../../x", "", true, nil},
		{"s3://b/tbl", "..", "", true, nil},
		{"s3://b/tbl", ".", "", true, nil},
		{"s3://b/tbl", "/tbl/x", "x", false, nil},
		{"s3://b/tbl", "/_delta_log/0.json", "", true, nil},
		{"s3://b/tbl", "s3://b/tbl/x", "x", false, nil},
		{"s3://b/tbl", "s3a://b/tbl/./y/../x", "x", false, nil},
		{"s3://b/tbl", "s3n://b/tbl/x", "x", false, nil},
		{"s3://b/tbl", "s3://other/tbl/x", "", true, nil},
		{"s3://b/tbl", "s3://b/tbl2/x", "", true, nil},
		{"s3://b/tbl", "s3://b/tbl", "", true, nil},
		{"s3://b/tbl", "s3://b/tbl/../x", "", true, nil},
		{"s3://b/tbl", "file:/etc/passwd", "", true, nil},
		{"s3://b/tbl", "abfss://c@a.dfs.core.windows.net/x", "", false, ErrUnrelatable},
		{"s3://b/", "x/y", "x/y", false, nil},
		{"s3://b/", "s3://b/x", "x", false, nil},
		{"file:///data/t", "file:///data/t/x", "x", false, nil},
		{"file:///data/t", "file:/data/t/x", "x", false, nil},
		{"file:///data/t", "file://localhost/data/t/x", "x", false, nil},
		{"file:///data/t", "file://host/data/t/x", "", true, nil},
		{"file:///data/t", "file:///data/t/../u/x", "", true, nil},
		{"file:///data/t", "file:///data/t%2F..%2F..%2Fetc/x", "", true, nil},
		{"file:///data/t", "s3://b/x", "", true, nil},
		{"file:///data/t/", "/data/t/x", "x", false, nil},
		{"file:///data/t", "a:b", "a:b", false, nil},
		{"file:///data/t", "a%3Ab", "a:b", false, nil},
		{"mem://x", "y", "y", false, nil},
		{"gs://b/p/q", "gs://b/p/q/r", "r", false, nil},
	}
	for _, c := range cases {
		t.Run(c.root+" "+c.path, func(t *testing.T) {
			r, err := ParseRoot(c.root)
			if err != nil {
				t.Fatal(err)
			}
			ref, err := r.Resolve(c.path)
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("err = %v, want %v", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ref.Inside() == c.outside || ref.Key != c.key {
				t.Fatalf("Resolve = %+v, want key %q outside %v", ref, c.key, c.outside)
			}
			k, kerr := r.Key(c.path)
			if c.outside != errors.Is(kerr, ErrOutside) || (!c.outside && k != c.key) {
				t.Fatalf("Key = %q, %v", k, kerr)
			}
		})
	}
}

func TestResolveRefusesBadEscapes(t *testing.T) {
	r, _ := ParseRoot("s3://b/t")
	for _, p := range []string{"a%zz", "a%", "x%00y"} {
		ref, err := r.Resolve(p)
		if err == nil && ref.Inside() {
			t.Errorf("Resolve(%q) = %+v inside, want an error or outside", p, ref)
		}
	}
}

func TestRelativeKey(t *testing.T) {
	for in, want := range map[string]string{
		"x": "x", "./x": "x", "a/./b": "a/b", "a/b/../c": "a/c", "a%20b": "a b", "p%3D1/x": "p=1/x", "%5Fdelta_log/x": "_delta_log/x",
	} {
		if got, err := RelativeKey(in); err != nil || got != want {
			t.Errorf("RelativeKey(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"/x", "s3://b/x", "file:/x", "../x", "a/../../x", "", "%2Fx", "."} {
		if got, err := RelativeKey(in); !errors.Is(err, ErrOutside) {
			t.Errorf("RelativeKey(%q) = %q, %v; want ErrOutside", in, got, err)
		}
	}
}

func TestClean(t *testing.T) {
	for _, c := range []struct {
		in, out string
		ok      bool
	}{
		{"x", "x", true}, {"a/b", "a/b", true}, {"./x", "x", true}, {"a//b", "a/b", true}, {"a/b/", "a/b", true},
		{"a/./b", "a/b", true}, {"a/../b", "b", true}, {"../x", "", false}, {"/x", "", false}, {"", "", false},
		{".", "", false}, {"a/..", "", false}, {"x\x00y", "", false},
	} {
		got, ok := Clean(c.in)
		if got != c.out || ok != c.ok {
			t.Errorf("Clean(%q) = %q, %v; want %q, %v", c.in, got, ok, c.out, c.ok)
		}
		if IsCanonical(c.in) != (c.ok && c.in == c.out) {
			t.Errorf("IsCanonical(%q) = %v", c.in, IsCanonical(c.in))
		}
	}
}

// Every spelling of one file inside the root replays under one key; a path
// outside, or one that does not decode, matches only itself and never a key
// inside the root.
func TestReplayKey(t *testing.T) {
	root, err := ParseRoot("s3://bucket/warehouse/events")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{"part-1.parquet", "part-1.parquet"},
		{"day=1/part-1.parquet", "day=1/part-1.parquet"},
		{"part%2D1.parquet", "part-1.parquet"},
		{"./part-1.parquet", "part-1.parquet"},
		{"day=1//part-1.parquet", "day=1/part-1.parquet"},
		{"day=1/../part-1.parquet", "part-1.parquet"},
		{"s3://bucket/warehouse/events/part-1.parquet", "part-1.parquet"},
		{"s3a://bucket/warehouse/events/day%3D1/part-1.parquet", "day=1/part-1.parquet"},
		{"/warehouse/events/part-1.parquet", "part-1.parquet"},
		{"a:b.parquet", "a:b.parquet"},
		{"a%25zz", "a%zz"},
		// Outside or undecodable: the path itself behind a NUL, never a key.
		{"a%zz", "\x00a%zz"},
		{"s3://other/part-1.parquet", "\x00s3://other/part-1.parquet"},
		{"../part-1.parquet", "\x00../part-1.parquet"},
		{"gs://bucket/warehouse/events/part-1.parquet", "\x00gs://bucket/warehouse/events/part-1.parquet"},
	} {
		if got := root.ReplayKey(tc.path); got != tc.want {
			t.Errorf("ReplayKey(%q) = %q, want %q", tc.path, got, tc.want)
		}
	}
}
