package webui

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/compactord/compactord/internal/units"
	"github.com/compactord/compactord/planner"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/scheduler"
)

// The fleet page's rows are computed here, not in fleet.js, so that sizes
// and times read as the CLI writes them (units.FormatBytes, UTC) and the
// "attention" column, what an operator must look at, is tested in Go.

// Attention kinds, in the order a row lists them.
const (
	AttnHalted      = "halted"
	AttnWaiting     = "waiting"
	AttnBackoff     = "backoff"
	AttnQuarantined = "quarantined"
	AttnTrigger     = "trigger"
	AttnHeld        = "held"
	AttnNoop        = "noop"
	AttnSkipped     = "skipped"
)

// attention is one reason a table needs an operator's look.
type attention struct {
	Kind string `json:"kind"`
	Text string `json:"text"`
}

// fleetRow is one table's line on the fleet page, formatted.
type fleetRow struct {
	Name      string      `json:"name"`
	URL       string      `json:"url"`
	State     string      `json:"state"`
	Attention []attention `json:"attention"`
	LastRun   string      `json:"last_run"`
	Result    string      `json:"result"`
	NextRun   string      `json:"next_run"`
	// Mergeable and Stuck split the small files: those a run merges now,
	// and those alone in their bins that no run merges as the table is.
	Mergeable   string `json:"mergeable"`
	Stuck       string `json:"stuck"`
	DVRatio     string `json:"dv_ratio"`
	Unclustered string `json:"unclustered"`
	Quarantined int    `json:"quarantined"`
	// Queue says where a table waiting for a worker is in the fleet
	// queue, its score and why it waits ("" when it does not wait).
	Queue string  `json:"queue"`
	Sort  sortKey `json:"sort"`
}

// sortKey holds the raw values the page sorts by.
type sortKey struct {
	Attention   int     `json:"attention"`
	LastRun     int64   `json:"last_run"`
	NextRun     int64   `json:"next_run"`
	Mergeable   int     `json:"mergeable"`
	Stuck       int     `json:"stuck"`
	DVRatio     float64 `json:"dv_ratio"`
	Unclustered int64   `json:"unclustered"`
}

// utc formats t as every page and the CLI do ("—" for none).
func utc(t time.Time) string { return formatWhen(&t) }

// stuckCodes are the planner's skip codes of small files that no run
// merges while the table stays as it is (alone in their bin or Z-cube).
var stuckCodes = map[string]bool{string(planner.SkipSingleFileBin): true, string(planner.SkipSingleZCube): true}

// fileCount says "n files, size" ("1 file, size").
func fileCount(n int, b int64) string {
	if n == 1 {
		return "1 file, " + units.FormatBytes(b)
	}
	return fmt.Sprintf("%d files, %s", n, units.FormatBytes(b))
}

// stuckOf counts the small files alone in their bins.
func stuckOf(b *scheduler.Backlog) (int, int64) {
	var n int
	var bytes int64
	for _, h := range b.Held {
		if stuckCodes[h.Code] {
			n += h.Files
			bytes += h.Bytes
		}
	}
	return n, bytes
}

// nextRunText says when the table runs next, or why it does not on a
// clock.
func nextRunText(t scheduler.TableStatus, p policies.Policy, havePolicy bool) string {
	switch {
	case !t.Enabled:
		return "disabled"
	case t.Halted:
		return "not while halted"
	case t.Waiting != nil:
		return "next attempt " + utc(t.Waiting.NextAttempt)
	case t.NextRun != nil:
		return utc(*t.NextRun)
	case havePolicy && p.Schedule == "":
		return "on triggers only"
	}
	return "—"
}

// attentionOf lists why t needs a look, most pressing first; nothing for a
// healthy table.
func attentionOf(t scheduler.TableStatus, p policies.Policy, havePolicy bool) []attention {
	var out []attention
	add := func(kind, format string, a ...any) { out = append(out, attention{kind, fmt.Sprintf(format, a...)}) }
	if t.Halted {
		s := "halted"
		if t.HaltedSince != nil {
			s += " since " + utc(*t.HaltedSince)
		}
		s += ": " + t.HaltReason
		if t.HaltAdvice != "" {
			s += "\nto clear: " + t.HaltAdvice
		}
		add(AttnHalted, "%s", s)
	}
	if w := t.Waiting; w != nil {
		add(AttnWaiting, "waiting since %s for the table to be readable: %s\nattempt %d, next attempt %s", utc(w.Since), w.Reason, w.Attempts, utc(w.NextAttempt))
	}
	if t.State == scheduler.StateBackoff && t.LastError != "" {
		s := fmt.Sprintf("%d failures in a row: %s", t.Failures, t.LastError)
		if t.NextRun != nil {
			s += "\nretry " + utc(*t.NextRun)
		}
		add(AttnBackoff, "%s", s)
	}
	if n := len(t.Quarantined); n > 0 {
		first := t.Quarantined[0]
		if n == 1 {
			add(AttnQuarantined, "1 quarantined file: %s", first)
		} else {
			add(AttnQuarantined, "%d quarantined files, first %s", n, first)
		}
	}
	b := t.Backlog
	if b != nil && havePolicy && !t.Halted && t.State != scheduler.StateRunning && t.State != scheduler.StateQueued {
		tr := p.Triggers
		if tr.DeletedRowsRatio > 0 && b.DeletedRowsRatio >= tr.DeletedRowsRatio {
			add(AttnTrigger, "DV ratio %s against a %s trigger", pctText(b.DeletedRowsRatio), pctText(tr.DeletedRowsRatio))
		}
		if tr.SmallFiles > 0 && b.MergeableFiles >= tr.SmallFiles {
			add(AttnTrigger, "%d mergeable small files against a trigger of %d", b.MergeableFiles, tr.SmallFiles)
		}
		if tr.UnclusteredBytes > 0 && b.UnclusteredBytes >= tr.UnclusteredBytes {
			add(AttnTrigger, "%s unclustered against a %s trigger", units.FormatBytes(b.UnclusteredBytes), units.FormatBytes(tr.UnclusteredBytes))
		}
	}
	shown := map[string]bool{}
	if b != nil {
		for _, h := range b.Held {
			if h.EligibleAt == nil {
				continue
			}
			shown[h.Code] = true
			add(AttnHeld, "%s held back until %s: %s", fileCount(h.Files, h.Bytes), utc(*h.EligibleAt), h.Reason)
		}
	}
	if r := t.LastRun; r != nil {
		switch {
		case r.Report.Skipped:
			add(AttnSkipped, "last run skipped: %s", r.Report.SkipReason)
		case r.Result == scheduler.ResultNoop:
			var why []string
			for _, h := range r.Report.Held {
				if !shown[h.Code] && h.Code != string(planner.SkipLargeEnough) {
					why = append(why, h.Reason)
				}
			}
			if len(why) > 0 {
				add(AttnNoop, "last run did nothing: %s", strings.Join(why, "; "))
			}
		}
	}
	return out
}

func pctText(r float64) string {
	s := fmt.Sprintf("%.1f", r*100)
	return strings.TrimSuffix(s, ".0") + "%"
}

// queueText is the fleet page's line for a table waiting for a worker.
func queueText(f scheduler.FleetStatus) string {
	q := f.Queued
	if q == nil {
		return ""
	}
	return fmt.Sprintf("#%d · score %.2f · quota %s used · %s", q.Position, q.Priority, pctText(f.QuotaOccupation), q.Why)
}

// fleetRows formats every table's row, tables needing attention first
// (most reasons first), then by name.
func fleetRows(ts []scheduler.TableStatus, policy func(string) (policies.Policy, bool)) []fleetRow {
	rows := make([]fleetRow, 0, len(ts))
	for _, t := range ts {
		var p policies.Policy
		ok := false
		if policy != nil {
			p, ok = policy(t.Name)
		}
		r := fleetRow{Name: t.Name, URL: t.URL, State: t.State, Attention: attentionOf(t, p, ok),
			LastRun: "—", Result: "—", NextRun: nextRunText(t, p, ok), Mergeable: "—", Stuck: "—", DVRatio: "—", Unclustered: "—",
			Quarantined: len(t.Quarantined)}
		if r.Attention == nil {
			r.Attention = []attention{}
		}
		r.Sort.Attention = len(r.Attention)
		if lr := t.LastRun; lr != nil {
			r.LastRun, r.Result, r.Sort.LastRun = utc(lr.End), lr.Result, lr.End.UnixNano()
		}
		if t.NextRun != nil {
			r.Sort.NextRun = t.NextRun.UnixNano()
		}
		r.Queue = queueText(t.Fleet)
		if b := t.Backlog; b != nil {
			sn, sb := stuckOf(b)
			r.Mergeable, r.Stuck = fileCount(b.MergeableFiles, b.MergeableBytes), fileCount(sn, sb)
			r.DVRatio, r.Unclustered = pctText(b.DeletedRowsRatio), units.FormatBytes(b.UnclusteredBytes)
			r.Sort.Mergeable, r.Sort.Stuck, r.Sort.DVRatio, r.Sort.Unclustered = b.MergeableFiles, sn, b.DeletedRowsRatio, b.UnclusteredBytes
		}
		rows = append(rows, r)
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if a, b := rows[i].Sort.Attention, rows[j].Sort.Attention; (a > 0) != (b > 0) {
			return a > 0
		}
		return rows[i].Name < rows[j].Name
	})
	return rows
}
