package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/compactord/compactord/inspect"
	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/internal/units"
)

// inspectJSON runs `inspect --json` and decodes the report.
func inspectJSON(t *testing.T, args ...string) (*inspect.Report, map[string]any) {
	t.Helper()
	var out, errOut bytes.Buffer
	if err := commandNamed("inspect").exec(context.Background(), append(args, "--json"), &out, &errOut); err != nil {
		t.Fatalf("inspect %v: %v (%s)", args, err, errOut.String())
	}
	var rep inspect.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(out.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	return &rep, raw
}

func TestInspectEveryTestTable(t *testing.T) {
	exp := testutil.ExpectedTables(t)
	for _, name := range slices.Sorted(maps.Keys(exp)) {
		want := exp[name]
		t.Run(name, func(t *testing.T) {
			rep, raw := inspectJSON(t, "file://"+testutil.DeltaTable(t, name))
			for _, k := range []string{"version", "numFiles", "sizeBytes", "numRecords", "numDeletedRows", "protocol", "rewritable", "refusal"} {
				if _, ok := raw[k]; !ok {
					t.Errorf("JSON lacks %q", k)
				}
			}
			proto := raw["protocol"].(map[string]any)
			for _, k := range []string{"minReaderVersion", "minWriterVersion", "readerFeatures", "writerFeatures"} {
				if _, ok := proto[k]; !ok {
					t.Errorf("protocol lacks %q", k)
				}
			}
			if rep.Version != want.Version || rep.NumFiles != want.LiveFiles {
				t.Errorf("version %d files %d, want %d and %d", rep.Version, rep.NumFiles, want.Version, want.LiveFiles)
			}
			if !want.LogOnly && rep.FilesWithUnknownRows == 0 && rep.NumRecords != want.LiveRows {
				t.Errorf("numRecords %d, want %d", rep.NumRecords, want.LiveRows)
			}
			if rep.NumPhysicalRecords-rep.NumDeletedRows != rep.NumRecords {
				t.Errorf("physical %d - deleted %d != live %d", rep.NumPhysicalRecords, rep.NumDeletedRows, rep.NumRecords)
			}
			files := 0
			var bytes int64
			for _, b := range rep.SizeHistogram {
				files += b.Files
				bytes += b.Bytes
			}
			if files != rep.NumFiles || bytes != rep.SizeBytes {
				t.Errorf("histogram holds %d files / %d bytes, report %d / %d", files, bytes, rep.NumFiles, rep.SizeBytes)
			}
			if want.MustRefuse && (rep.Rewritable || rep.Refusal == "" || len(rep.Refusals) == 0) {
				t.Errorf("must be refused: rewritable=%v refusal=%q", rep.Rewritable, rep.Refusal)
			}
			if rep.Rewritable != (rep.Refusal == "") {
				t.Errorf("rewritable=%v but refusal=%q", rep.Rewritable, rep.Refusal)
			}
		})
	}
}

func TestInspectDetails(t *testing.T) {
	// DVs: dv-basic-with-checkpoint has 46 deleted rows of 500 in 2 files.
	rep, _ := inspectJSON(t, "file://"+testutil.DeltaTable(t, "dv-basic-with-checkpoint"))
	if rep.NumDeletedRows != 46 || rep.FilesWithDVs == 0 || rep.NumRecords != 454 || rep.DeletedRowRatio <= 0 {
		t.Errorf("dv-basic-with-checkpoint: deleted %d, DV files %d, live %d, ratio %v", rep.NumDeletedRows, rep.FilesWithDVs, rep.NumRecords, rep.DeletedRowRatio)
	}
	// Partitions: part-null has one null and one non-null partition; plain
	// local paths are accepted.
	rep, _ = inspectJSON(t, testutil.DeltaTable(t, "part-null"))
	nulls := 0
	for _, p := range rep.Partitions {
		for _, v := range p.Values {
			if v == nil {
				nulls++
			}
		}
	}
	if rep.NumPartitions != 2 || nulls != 1 {
		t.Errorf("part-null: %d partitions, %d null values: %+v", rep.NumPartitions, nulls, rep.Partitions)
	}
	// Clustering: DBR paths and legacy liquid.
	rep, _ = inspectJSON(t, "file://"+testutil.DeltaTable(t, "ckpt-only-domain-metadata-clustering-rowtracking"))
	if len(rep.ClusteringColumns) != 1 || strings.Join(rep.ClusteringColumns[0], ".") != "department" {
		t.Errorf("clustering columns %v", rep.ClusteringColumns)
	}
	if rt := rep.RowTracking; rt == nil || !rt.Enabled || rt.HighWaterMark != 435 ||
		rt.RowIDColumn != "_row-id-col-f5a0d1eb-7d6f-4790-a660-704245a8f9df" || rt.RowCommitVersionColumn != "_row-commit-version-col-91cdf203-fbb9-4bf4-93d9-2c881b029958" {
		t.Errorf("row tracking %+v", rep.RowTracking)
	}
	rep, _ = inspectJSON(t, "file://"+testutil.DeltaTable(t, "liquid-legacy-rowtracking"))
	if len(rep.ClusteringColumns) != 1 || rep.ClusteringColumns[0][0] != "id" || !rep.Rewritable {
		t.Errorf("liquid: clustering %v rewritable %v", rep.ClusteringColumns, rep.Rewritable)
	}
	if rt := rep.RowTracking; rt == nil || !rt.Enabled || rt.HighWaterMark != 9 {
		t.Errorf("liquid: row tracking %+v", rep.RowTracking)
	}
	// Refusal names the features.
	rep, _ = inspectJSON(t, "file://"+testutil.DeltaTable(t, "many-table-features"))
	if !strings.Contains(rep.Refusal, "minReaderVersion=5") || !strings.Contains(rep.Refusal, `"blahabl"`) {
		t.Errorf("refusal %q", rep.Refusal)
	}
	rep, _ = inspectJSON(t, "file://"+testutil.DeltaTable(t, "catalog-managed-ict-staged"))
	if len(rep.Refusals) == 0 || rep.Refusals[0].Feature != "catalogManaged" {
		t.Errorf("refusals %+v", rep.Refusals)
	}
	// Small-file threshold flag and time travel.
	rep, _ = inspectJSON(t, "file://"+testutil.DeltaTable(t, "dv-inline-cdf"), "--small-file-size", "1B", "--version", "1")
	if rep.SmallFiles != 0 || rep.Version != 1 || rep.NumRecords != 8 {
		t.Errorf("dv-inline-cdf@1: small %d version %d live %d", rep.SmallFiles, rep.Version, rep.NumRecords)
	}
	rep, _ = inspectJSON(t, "file://"+testutil.DeltaTable(t, "dv-inline-cdf"), "--small-file-size", "1MiB")
	if rep.SmallFiles != rep.NumFiles {
		t.Errorf("all files are below 1MiB: %d of %d small", rep.SmallFiles, rep.NumFiles)
	}
}

func TestInspectTextAndErrors(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := commandNamed("inspect").exec(context.Background(), []string{"file://" + testutil.DeltaTable(t, "dv-partitioned-with-checkpoint")}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"version", "15", "deletion vectors", "partitions", "part=", "rewritable", "yes"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text output lacks %q:\n%s", want, out.String())
		}
	}
	for _, tc := range []struct {
		args  []string
		want  string
		usage bool
	}{
		{nil, "missing table URL", true},
		{[]string{"file://" + testutil.DeltaTable(t, "dv-small"), "--small-file-size", "big"}, "--small-file-size", true},
		{[]string{"file://" + testutil.DeltaTable(t, "dv-small"), "--version", "9"}, "version 9", false},
		{[]string{"file://" + t.TempDir()}, "no commits", false},
	} {
		err := commandNamed("inspect").exec(context.Background(), tc.args, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), tc.want) || errors.Is(err, errUsage) != tc.usage {
			t.Errorf("inspect %v: err = %v, want %q (usage %v)", tc.args, err, tc.want, tc.usage)
		}
	}
}

// TestInspectShowsTheClusteringState reads a hand-written clustered log:
// unclustered files, two Z-cubes (largest first) and a file clustered
// without a Z-cube tag.
func TestInspectShowsTheClusteringState(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "_delta_log"), 0o755); err != nil {
		t.Fatal(err)
	}
	add := func(path string, size int, tags, provider string) string {
		s := `{"add":{"path":"` + path + `","partitionValues":{},"size":` + strconv.Itoa(size) + `,"modificationTime":1,"dataChange":true,"stats":"{\"numRecords\":1}"`
		if tags != "" {
			s += `,"tags":` + tags
		}
		if provider != "" {
			s += `,"clusteringProvider":"` + provider + `"`
		}
		return s + "}}"
	}
	cube := func(id string) string { return `{"ZCUBE_ID":"` + id + `","ZCUBE_ZORDER_BY":"[\"k\"]"}` }
	log := strings.Join([]string{
		`{"protocol":{"minReaderVersion":1,"minWriterVersion":7,"writerFeatures":["domainMetadata","clustering"]}}`,
		`{"metaData":{"id":"t","format":{"provider":"parquet","options":{}},"schemaString":"{\"type\":\"struct\",\"fields\":[{\"name\":\"k\",\"type\":\"long\",\"nullable\":true,\"metadata\":{}}]}","partitionColumns":[],"configuration":{},"createdTime":1}}`,
		`{"domainMetadata":{"domain":"delta.clustering","configuration":"{\"clusteringColumns\":[[\"k\"]]}","removed":false}}`,
		add("u1.parquet", 100, "", ""),
		add("u2.parquet", 50, "", ""),
		add("a1.parquet", 1000, cube("cube-a"), "liquid"),
		add("a2.parquet", 500, cube("cube-a"), "liquid"),
		add("b1.parquet", 3000, cube("cube-b"), "liquid"),
		add("w1.parquet", 70, "", "liquid"),
	}, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(dir, "_delta_log", "00000000000000000000.json"), []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, _ := inspectJSON(t, "file://"+dir)
	c := rep.Clustering
	if c == nil {
		t.Fatal("no clustering state in the report")
	}
	want := []inspect.ZCube{{ID: "cube-b", Files: 1, Bytes: 3000}, {ID: "cube-a", Files: 2, Bytes: 1500}}
	if c.UnclusteredFiles != 2 || c.UnclusteredBytes != 150 || c.OtherFiles != 1 || !reflect.DeepEqual(c.ZCubes, want) {
		t.Fatalf("clustering state %+v", c)
	}
	var out, errOut bytes.Buffer
	if err := commandNamed("inspect").exec(context.Background(), []string{"file://" + dir}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"unclustered", "2 files", "z-cubes", "cube-b", "clustered, no z-cube"} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("text report lacks %q:\n%s", line, out.String())
		}
	}
}

// Partition values are keyed by physical name under column mapping; the
// report shows them under the logical column names.
func TestInspectPartitionsOfAColumnMappedTable(t *testing.T) {
	rep, _ := inspectJSON(t, "file://"+testutil.DeltaTable(t, "cm-name-partitioned-all-types"))
	if rep.NumPartitions != 3 {
		t.Fatalf("%d partitions, want 3: %+v", rep.NumPartitions, rep.Partitions)
	}
	var ints []string
	for _, p := range rep.Partitions {
		if v := p.Values["as_int"]; v != nil {
			ints = append(ints, *v)
		}
	}
	sort.Strings(ints)
	if strings.Join(ints, ",") != "0,1" {
		t.Fatalf("as_int values %v, want 0 and 1 (and one null partition)", ints)
	}
}

// Files without statistics are counted from their footers, not as 0 rows.
func TestInspectCountsTheRowsOfFilesWithoutStatsFromTheirFooters(t *testing.T) {
	for name, want := range map[string]int64{"part-special-chars": 2, "small-files-merge-update-delete": 3, "stats-optional": 2} {
		rep, _ := inspectJSON(t, "file://"+testutil.DeltaTable(t, name))
		if rep.FilesWithoutStats == 0 || rep.RowsFromFooters != rep.FilesWithoutStats || rep.NumRecords != want {
			t.Errorf("%s: %d files without stats, %d counted from footers, %d rows; want all counted and %d rows",
				name, rep.FilesWithoutStats, rep.RowsFromFooters, rep.NumRecords, want)
		}
	}
}

func TestInspectWritesHumanSizesAndAnUnescapedOpenBucket(t *testing.T) {
	url := "file://" + testutil.DeltaTable(t, "dv-basic-with-checkpoint")
	var out, errOut bytes.Buffer
	if err := commandNamed("inspect").exec(context.Background(), []string{url, "--json"}, &out, &errOut); err != nil {
		t.Fatalf("%v (%s)", err, errOut.String())
	}
	if !strings.Contains(out.String(), `"label": ">=1 GiB"`) || strings.Contains(out.String(), `\u003e`) {
		t.Errorf("open bucket label escaped or missing:\n%s", out.String())
	}
	var raw struct {
		SizeHistogram []map[string]any `json:"sizeHistogram"`
		SizeBytes     int64            `json:"sizeBytes"`
	}
	if err := json.Unmarshal(out.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	for i, b := range raw.SizeHistogram {
		_, has := b["upperBytes"]
		if last := i == len(raw.SizeHistogram)-1; has == last {
			t.Errorf("bucket %v: upperBytes present %v, want %v", b, has, !last)
		}
	}
	if got := raw.SizeHistogram[0]["label"]; got != "<1 MiB" {
		t.Errorf("first label %q", got)
	}
	out.Reset()
	if err := commandNamed("inspect").exec(context.Background(), []string{url}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if want := "(" + units.FormatBytes(raw.SizeBytes) + ")"; !strings.Contains(text, want) || !strings.Contains(want, " KiB)") {
		t.Errorf("files line lacks %q:\n%s", want, text)
	}
	if m := regexp.MustCompile(`\d(B|KiB|MiB|GiB)\b`).FindString(text); m != "" {
		t.Errorf("size without the space of the one format (%q):\n%s", m, text)
	}
}

// inspect lists the schema, partition columns marked, in text and JSON:
// what picking a retention column needs.
func TestInspectPrintsTheSchema(t *testing.T) {
	url := "file://" + testutil.DeltaTable(t, "part-null")
	rep, raw := inspectJSON(t, url)
	want := []inspect.Column{{Name: "k", Type: "string", Nullable: true, Partition: true}, {Name: "v", Type: "long", Nullable: true}}
	if !reflect.DeepEqual(rep.Schema, want) {
		t.Errorf("schema %+v, want %+v", rep.Schema, want)
	}
	if _, ok := raw["schema"]; !ok {
		t.Error("JSON lacks \"schema\"")
	}
	var out, errOut bytes.Buffer
	if err := commandNamed("inspect").exec(context.Background(), []string{url}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	for _, re := range []string{`(?m)^schema\s+2 columns$`, `(?m)^  k\s+string\s+nullable, partition column$`, `(?m)^  v\s+long\s+nullable$`} {
		if !regexp.MustCompile(re).MatchString(out.String()) {
			t.Errorf("text lacks %s:\n%s", re, out.String())
		}
	}
}
