package clusteradvise_test

import (
	"strings"
	"testing"
	"time"

	"github.com/compactord/compactord/clusteradvise"
	"github.com/compactord/compactord/clusteradvise/synth"
)

// testOptions are the defaults with no table-size floor (the synthetic
// tables stand for small sizes).
func testOptions() clusteradvise.Options {
	o := clusteradvise.DefaultOptions()
	o.MinTableBytes = 0
	return o
}

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// evidenceOf records texts spread over the week before now.
func evidenceOf(t *testing.T, texts []string, now time.Time) *clusteradvise.Record {
	t.Helper()
	rec := clusteradvise.NewRecord(0)
	for i, p := range texts {
		at := now.Add(-time.Duration(len(texts)-i) * 7 * 24 * time.Hour / time.Duration(len(texts)))
		if err := rec.Add(p, 1, at, clusteradvise.SourcePush); err != nil {
			t.Fatal(err)
		}
	}
	rec.DecayTo(now)
	return rec
}

type synthCase struct {
	tbl   *synth.Table
	files []clusteradvise.File
	smp   *clusteradvise.Sample
}

func newSynth(t *testing.T, rows, rowsPerFile, sample int) synthCase {
	t.Helper()
	tbl := synth.NewTable(rows, 1)
	files, err := tbl.Files(nil, rowsPerFile)
	if err != nil {
		t.Fatal(err)
	}
	return synthCase{tbl: tbl, files: files, smp: tbl.Sample(sample, 2)}
}

func (s synthCase) advise(t *testing.T, rec *clusteradvise.Record, current []string, rowsPerFile int) *clusteradvise.Advice {
	t.Helper()
	adv, err := clusteradvise.Advise(clusteradvise.Input{
		Columns: synth.ColumnMap(), Files: s.files, TargetFileSize: int64(rowsPerFile * synth.RowBytes),
		Current: current, Sample: s.smp, Evidence: rec,
	}, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	return adv
}

func TestTheAdvisorPicksTheKeyEachWorkloadFiltersOn(t *testing.T) {
	const rows, perFile = 200_000, 2000
	s := newSynth(t, rows, perFile, 10_000)
	for _, c := range []struct {
		workload string
		want     string
	}{
		{synth.WorkloadA, "a"},
		{synth.WorkloadBC, "b,c"},
		{synth.WorkloadUniform, ""},
	} {
		rec := evidenceOf(t, synth.Workload(c.workload, 500, 3), epoch)
		adv := s.advise(t, rec, nil, perFile)
		v := clusteradvise.Decide(adv, clusteradvise.State{}, epoch, testOptions())
		got := ""
		if v.Change {
			got = strings.Join(sorted(v.Key), ",")
		}
		for i, e := range adv.Ranking[:min(5, len(adv.Ranking))] {
			t.Logf("%s #%d %v files %.1f gain %.2f score %.3g", c.workload, i, e.Key, e.FilesRead, e.Gain, e.Score)
		}
		t.Logf("%s: baseline files %.1f; verdict %v %v: %s", c.workload, adv.Baseline.FilesRead, v.Change, v.Key, v.Reason)
		if got != c.want {
			t.Errorf("workload %s: picked %q, want %q (%s)", c.workload, got, c.want, v.Reason)
		}
	}
}

func sorted(k []string) []string {
	out := append([]string(nil), k...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}
