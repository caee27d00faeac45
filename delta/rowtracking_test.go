package delta

import (
	"fmt"
	"strings"
	"testing"

	"github.com/compactord/compactord/delta/actions"
)

// hwmCase is one domain configuration and what ParseRowIDHighWaterMark
// makes of it.
type hwmCase struct {
	config  string
	want    int64
	wantErr string
}

func TestParseRowIDHighWaterMark(t *testing.T) {
	for _, tc := range []hwmCase{
		{config: `{"rowIdHighWaterMark":9,"domainName":"delta.rowTracking"}`, want: 9},
		{config: `{"rowIdHighWaterMark":-1}`, want: -1},
		{config: `{"rowIdHighWaterMark":9223372036854775807}`, want: 9223372036854775807},
		{config: `{"domainName":"delta.rowTracking"}`, wantErr: "no rowIdHighWaterMark"},
		{config: `{"rowIdHighWaterMark":1.5}`, wantErr: "not a row id"},
		{config: `{"rowIdHighWaterMark":-2}`, wantErr: "not a row id"},
		{config: `not json`, wantErr: "parse"},
	} {
		got, err := ParseRowIDHighWaterMark(tc.config)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err = %v, want %q", tc.config, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: got %d, %v; want %d", tc.config, got, err, tc.want)
		}
	}
}

func i64(v int64) *int64 { return &v }

func TestAssignRowIDs(t *testing.T) {
	supported := RowTracking{Supported: true}
	newAdd := func(path string, n int) actions.Action {
		return actions.Action{Add: &actions.Add{Path: path, Stats: fmt.Sprintf(`{"numRecords":%d}`, n)}}
	}
	recommitted := actions.Action{Add: &actions.Add{Path: "old", Stats: `{"numRecords":5}`, BaseRowID: i64(3), DefaultRowCommitVersion: i64(2)}}
	remove := actions.Action{Remove: &actions.Remove{Path: "gone", BaseRowID: i64(0), DefaultRowCommitVersion: i64(0)}}
	for _, tc := range []struct {
		name    string
		rt      RowTracking
		actions []actions.Action
		hwm     int64
		// want is path -> [baseRowId, defaultRowCommitVersion] of each add.
		want    map[string][2]int64
		wantHWM int64 // -2: no domain action expected
		wantErr string
	}{
		{name: "first ids of a table start at 0", rt: supported, hwm: -1,
			actions: []actions.Action{newAdd("a", 3), newAdd("b", 4)},
			want:    map[string][2]int64{"a": {0, 7}, "b": {3, 7}}, wantHWM: 6},
		{name: "ranges follow the high-water mark, sized by numRecords", rt: supported, hwm: 435,
			actions: []actions.Action{remove, newAdd("a", 10), recommitted, newAdd("b", 1)},
			want:    map[string][2]int64{"a": {436, 7}, "old": {3, 2}, "b": {446, 7}}, wantHWM: 446},
		{name: "re-committed adds keep theirs and need no domain", rt: supported, hwm: 20,
			actions: []actions.Action{recommitted}, want: map[string][2]int64{"old": {3, 2}}, wantHWM: -2},
		{name: "an empty file takes no ids", rt: supported, hwm: 20,
			actions: []actions.Action{newAdd("e", 0)}, want: map[string][2]int64{"e": {21, 7}}, wantHWM: -2},
		{name: "suspended assigns nothing", rt: RowTracking{Supported: true, Suspended: true}, hwm: 20,
			actions: []actions.Action{newAdd("a", 3)}, want: map[string][2]int64{"a": {-1, -1}}, wantHWM: -2},
		{name: "unsupported assigns nothing", rt: RowTracking{}, hwm: -1,
			actions: []actions.Action{newAdd("a", 3)}, want: map[string][2]int64{"a": {-1, -1}}, wantHWM: -2},
		{name: "no numRecords is refused", rt: supported, hwm: 1,
			actions: []actions.Action{{Add: &actions.Add{Path: "x"}}}, wantErr: "without numRecords"},
		{name: "a domain set by the caller is refused", rt: supported, hwm: 1,
			actions: []actions.Action{{DomainMetadata: RowTrackingDomain(5)}}, wantErr: "sets domain"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := AssignRowIDs(tc.rt, tc.actions, 7, tc.hwm)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			hwm, ok, err := RowTrackingHighWaterMark(got)
			if err != nil {
				t.Fatal(err)
			}
			if (tc.wantHWM == -2) == ok || (ok && hwm != tc.wantHWM) {
				t.Errorf("high-water mark %d (set %v), want %d", hwm, ok, tc.wantHWM)
			}
			if ok && got[0].DomainMetadata == nil {
				t.Errorf("the domain action is not first: %+v", got[0])
			}
			for _, a := range got {
				if a.Add == nil {
					continue
				}
				w := tc.want[a.Add.Path]
				b, v := int64(-1), int64(-1)
				if a.Add.BaseRowID != nil {
					b = *a.Add.BaseRowID
				}
				if a.Add.DefaultRowCommitVersion != nil {
					v = *a.Add.DefaultRowCommitVersion
				}
				if b != w[0] || v != w[1] {
					t.Errorf("add %s: baseRowId %d defaultRowCommitVersion %d, want %v", a.Add.Path, b, v, w)
				}
			}
			// The input is never modified: a later attempt assigns again.
			for _, a := range tc.actions {
				if a.Add != nil && a.Add.Path != "old" && a.Add.BaseRowID != nil {
					t.Errorf("input add %s was modified", a.Add.Path)
				}
			}
		})
	}
}
