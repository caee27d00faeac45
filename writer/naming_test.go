package writer

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/schema"
)

func strp(s string) *string { return &s }

func TestPartitionDirFragmentEscapesAsSpark(t *testing.T) {
	tests := []struct {
		name  string
		col   string
		value *string
		want  string
	}{
		{"plain value is kept", "k", strp("A"), "k=A"},
		{"slash is escaped (fixture part-special-chars)", "x", strp("A/A"), "x=A%2FA"},
		{"space is kept as Spark does", "x", strp("B B"), "x=B B"},
		{"null is the Hive default partition", "k", nil, "k=__HIVE_DEFAULT_PARTITION__"},
		{"empty string is the Hive default partition", "k", strp(""), "k=__HIVE_DEFAULT_PARTITION__"},
		{"colon in timestamps is escaped", "ts", strp("2021-09-08 11:11:11"), "ts=2021-09-08 11%3A11%3A11"},
		{"equals, percent and hash are escaped", "c", strp("a=b%c#d"), "c=a%3Db%25c%23d"},
		{"control characters and DEL are escaped upper-case hex", "c", strp("a\x01b\x7f"), "c=a%01b%7F"},
		{"braces, brackets, caret, quote, star, question, backslash", "c", strp(`{[]^'"*?\`), "c=%7B%5B%5D%5E%27%22%2A%3F%5C"},
		{"non-ASCII is kept", "c", strp("żółw"), "c=żółw"},
		{"the column name is escaped too", "a:b", strp("1"), "a%3Ab=1"},
		{"literal null string is a value", "c", strp("null"), "c=null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := partitionDirFragment(tt.col, tt.value); got != tt.want {
				t.Errorf("partitionDirFragment(%q, %v) = %q, want %q", tt.col, tt.value, got, tt.want)
			}
		})
	}
}

func TestOutputKeysFollowDeltaNaming(t *testing.T) {
	uuidRe := `[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`
	cm := func(phys string) map[string]json.RawMessage {
		return map[string]json.RawMessage{"delta.columnMapping.physicalName": json.RawMessage(`"` + phys + `"`)}
	}
	tests := []struct {
		name string
		snap *delta.Snapshot
		pv   map[string]*string
		ext  string
		idx  int
		want string
	}{
		{
			name: "unpartitioned zstd",
			snap: &delta.Snapshot{},
			ext:  ".zstd", idx: 3,
			want: `^part-00003-` + uuidRe + `\.c000\.zstd\.parquet$`,
		},
		{
			name: "uncompressed has no codec infix",
			snap: &delta.Snapshot{},
			idx:  0,
			want: `^part-00000-` + uuidRe + `\.c000\.parquet$`,
		},
		{
			name: "partition directories in metadata order",
			snap: &delta.Snapshot{Metadata: actions.Metadata{PartitionColumns: []string{"b", "a"}}},
			pv:   map[string]*string{"a": strp("1"), "b": nil},
			ext:  ".snappy",
			want: `^b=__HIVE_DEFAULT_PARTITION__/a=1/part-00000-` + uuidRe + `\.c000\.snappy\.parquet$`,
		},
		{
			name: "column mapping uses physical names",
			snap: &delta.Snapshot{
				Metadata: actions.Metadata{PartitionColumns: []string{"Part"}, Configuration: map[string]string{"delta.columnMapping.mode": "name"}},
				Schema:   &schema.StructType{Fields: []*schema.StructField{{Name: "id"}, {Name: "Part", Metadata: cm("col-1234")}}},
			},
			pv:   map[string]*string{"col-1234": strp("x/y")},
			ext:  ".gz",
			want: `^col-1234=x%2Fy/part-00000-` + uuidRe + `\.c000\.gz\.parquet$`,
		},
		{
			name: "random prefixes replace partition directories",
			snap: &delta.Snapshot{Metadata: actions.Metadata{PartitionColumns: []string{"p"}, Configuration: map[string]string{"delta.randomizeFilePrefixes": "true"}}},
			pv:   map[string]*string{"p": strp("1")},
			ext:  ".zstd",
			want: `^[A-Za-z0-9]{2}/part-00000-` + uuidRe + `\.c000\.zstd\.parquet$`,
		},
		{
			name: "random prefix length is honoured",
			snap: &delta.Snapshot{Metadata: actions.Metadata{Configuration: map[string]string{"delta.randomizeFilePrefixes": "true", "delta.randomPrefixLength": "5"}}},
			ext:  ".zstd",
			want: `^[A-Za-z0-9]{5}/part-00000-`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := newLayout(tt.snap, tt.pv, tt.ext)
			if err != nil {
				t.Fatal(err)
			}
			got := l.key(tt.idx)
			if !regexp.MustCompile(tt.want).MatchString(got) {
				t.Errorf("key = %q, want match %s", got, tt.want)
			}
			if l.key(tt.idx) == got {
				t.Errorf("two keys are equal: %q", got)
			}
		})
	}
}

func TestLayoutRejectsMissingPartitionValue(t *testing.T) {
	snap := &delta.Snapshot{Metadata: actions.Metadata{PartitionColumns: []string{"p"}}}
	_, err := newLayout(snap, map[string]*string{"q": strp("1")}, "")
	if err == nil || !strings.Contains(err.Error(), `"p"`) {
		t.Fatalf("err = %v, want one naming column p", err)
	}
}

func TestEncodedKeyDecodesBackOnce(t *testing.T) {
	key := "x=A%2FA/ts=2021-09-08 11%3A11%3A11/part-00000-x.c000.zstd.parquet"
	p := actions.EncodePath(key)
	if want := "x=A%252FA/ts=2021-09-08%2011%253A11%253A11/part-00000-x.c000.zstd.parquet"; p != want {
		t.Errorf("EncodePath = %q, want %q (the log form Spark writes)", p, want)
	}
	back, err := actions.DecodePath(p)
	if err != nil || back != key {
		t.Errorf("DecodePath(EncodePath(k)) = %q, %v; want %q", back, err, key)
	}
}

// Tables whose source directories were not written by Spark's escaping, so
// they cannot serve as the reference for partitionDirFragment.
var nonSparkPartitionDirs = map[string]string{
	"cm-name-partition-col-with-spaces":   "delta-rs random prefixes without delta.randomizeFilePrefixes",
	"cm-rename-partition-generated-check": "delta-rs random prefixes without delta.randomizeFilePrefixes",
	"part-special-chars":                  "delta-rs escapes the space (x=B%20B); Spark keeps it",
	"part-timestamp-iso8601":              "directory holds the session-zone form, the log the ISO-8601 form we copy",
	"part-timestamp-utc":                  "kernel-rs fixture leaves ':' unescaped",
}

func TestPartitionDirsMatchSparkWrittenTables(t *testing.T) {
	tables := readableTables(t)
	compared := 0
	for name := range tables {
		if _, skip := nonSparkPartitionDirs[name]; skip {
			continue
		}
		tbl, _ := copyTable(t, name)
		snap, err := loadLatest(t.Context(), tbl)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(snap.Metadata.PartitionColumns) == 0 {
			continue
		}
		for _, f := range snap.Files {
			l, err := newLayout(snap, f.PartitionValues, "")
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			key, err := f.Key()
			if err != nil {
				t.Fatal(err)
			}
			dir := key[:strings.LastIndex(key, "/")+1]
			if dir != l.dir {
				t.Errorf("%s: Spark wrote %q, we would write %q", name, dir, l.dir)
			}
			compared++
		}
	}
	if compared < 30 {
		t.Errorf("compared only %d partitioned source files", compared)
	}
}
