package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/compactord/compactord/internal/testutil"
)

func TestCat(t *testing.T) {
	url := func(name string) string { return "file://" + testutil.DeltaTable(t, name) }
	for _, tc := range []struct {
		name      string
		args      []string
		wantLines []string
		wantErr   string
		usage     bool
	}{
		{name: "live rows with DV applied", args: []string{url("dv-small")},
			wantLines: []string{`{"value":1}`, `{"value":2}`, `{"value":3}`, `{"value":4}`, `{"value":5}`, `{"value":6}`, `{"value":7}`, `{"value":8}`}},
		{name: "limit after the URL", args: []string{url("dv-small"), "--limit", "2"},
			wantLines: []string{`{"value":1}`, `{"value":2}`}},
		{name: "time travel", args: []string{"--version", "3", url("dv-inline-cdf")},
			wantLines: []string{`{"value":2}`, `{"value":3}`, `{"value":6}`, `{"value":7}`, `{"value":8}`, `{"value":9}`}},
		{name: "partition zone", args: []string{url("part-values-all-types"), "--limit", "1", "--time-zone", "America/Los_Angeles"},
			wantLines: []string{`{"as_int":0,"as_long":0,"as_byte":0,"as_short":0,"as_boolean":true,"as_float":0,"as_double":0,"as_string":"0","as_string_lit_null":"null","as_date":"2021-09-08","as_timestamp":"2021-09-08T18:11:11.000000Z","as_big_decimal":0,"as_list_of_records":[{"val":0},{"val":0},{"val":0}],"as_nested_struct":{"aa":"0","ab":"0","ac":{"aca":0,"acb":0}},"value":"0"}`}},
		{name: "row ids of a row tracking table", args: []string{url("liquid-legacy-rowtracking"), "--row-ids", "--limit", "2"},
			wantLines: []string{`{"id":0,"_row_id":0,"_row_commit_version":0}`, `{"id":1,"_row_id":1,"_row_commit_version":0}`}},
		{name: "row ids without row tracking are refused", args: []string{url("dv-small"), "--row-ids"}, wantErr: "row tracking is not enabled"},
		{name: "unreadable table is refused", args: []string{url("many-table-features")}, wantErr: "minReaderVersion=5"},
		{name: "missing URL", args: nil, wantErr: "missing table URL", usage: true},
		{name: "bad limit", args: []string{url("dv-small"), "--limit", "-1"}, wantErr: "--limit", usage: true},
		{name: "unknown version", args: []string{url("dv-small"), "--version", "7"}, wantErr: "version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := commandNamed("cat").exec(context.Background(), tc.args, &out, &errOut)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				if errors.Is(err, errUsage) != tc.usage {
					t.Fatalf("usage error = %v, want %v", errors.Is(err, errUsage), tc.usage)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			if strings.Join(got, "\n") != strings.Join(tc.wantLines, "\n") {
				t.Fatalf("got\n%s\nwant\n%s", out.String(), strings.Join(tc.wantLines, "\n"))
			}
		})
	}
}
