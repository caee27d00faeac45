package webui

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/compactord/compactord/checkpoint"
	"github.com/compactord/compactord/compaction"
	"github.com/compactord/compactord/inspect"
	"github.com/compactord/compactord/internal/units"
	"github.com/compactord/compactord/logcleanup"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/scheduler"
	"github.com/compactord/compactord/vacuum"
)

// The daemon's HTML view: the fleet page at / (a shell that fleet.js fills
// from /status, refreshing itself) and a page per table at /tables/{name}
// (rendered here, charts as server-side SVG). Assets are embedded; the
// pages load nothing from anywhere but this listener (the
// Content-Security-Policy says so to the browser too).

//go:embed web
var webFiles embed.FS

const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// Source is what the pages show, as the daemon knows it.
type Source struct {
	// Version is the daemon's version, shown in every page's header.
	Version string
	// Replica is the daemon's replica name ("" without leases).
	Replica string
	// Status is the scheduler's status of every table.
	Status func() []scheduler.TableStatus
	// Samples, when set, hands every table's backlog and last run to its
	// argument without copying them (scheduler.Scheduler.Samples): the
	// history samples through it, Status otherwise.
	Samples func(func(scheduler.Sample))
	// Policy is a table's loaded policy.
	Policy func(name string) (policies.Policy, bool)
	// Plan is a dry run with the real planner (JSON-encoded on the page).
	Plan func(ctx context.Context, p policies.Policy, exclude map[string]bool) (any, error)
	// Inspect reports on a table as `compactord inspect` does. May be nil.
	Inspect func(ctx context.Context, p policies.Policy) (*inspect.Report, error)
}

// UI is the HTML view of one daemon: its parsed pages and its in-memory
// history.
type UI struct {
	src   Source
	hist  *history
	pages *webPages
}

// New parses the embedded pages.
func New(src Source) (*UI, error) {
	pages, err := parseWebPages()
	if err != nil {
		return nil, err
	}
	return &UI{src: src, hist: newHistory(), pages: pages}, nil
}

// webPages holds the parsed templates.
type webPages struct {
	fleet, table *template.Template
}

func parseWebPages() (*webPages, error) {
	funcs := template.FuncMap{
		"size": func(n int64) string { return units.FormatBytes(n) },
		"when": formatWhen,
		"at":   func(t time.Time) string { return formatWhen(&t) },
		"seconds": func(s float64) string {
			return (time.Duration(s * float64(time.Second))).Round(time.Millisecond).String()
		},
		"pct":   func(r float64) string { return fmt.Sprintf("%.2f%%", r*100) },
		"join":  func(xs []string) string { return strings.Join(xs, ", ") },
		"bytes": func(f float64) string { return units.FormatBytes(int64(f)) },
	}
	fleet, err := template.New("fleet.html").Funcs(funcs).ParseFS(webFiles, "web/fleet.html")
	if err != nil {
		return nil, fmt.Errorf("web: %w", err)
	}
	table, err := template.New("table.html").Funcs(funcs).ParseFS(webFiles, "web/table.html")
	if err != nil {
		return nil, fmt.Errorf("web: %w", err)
	}
	return &webPages{fleet: fleet, table: table}, nil
}

func formatWhen(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "—"
	}
	return units.FormatTime(*t)
}

// runRow is one line of a table page's recent runs.
type runRow struct {
	Start           time.Time
	Reason, Result  string
	Duration        float64
	FilesIn         int
	FilesOut        int
	BytesIn         int64
	BytesOut        int64
	Reconciliations int64
	Dropped         int64
	Conflicts       string
	Ops             string
	Error           string
}

func runRowOf(r scheduler.RunRecord) runRow {
	rep := r.Report
	row := runRow{Start: r.Start, Reason: r.Reason, Result: r.Result, Duration: r.Duration,
		FilesIn: rep.FilesRemoved, FilesOut: rep.FilesAdded, BytesIn: rep.BytesRemoved, BytesOut: rep.BytesAdded,
		Reconciliations: rep.Counts[compaction.CountReconciliations], Dropped: rep.Counts[compaction.CountJobsDropped],
		Conflicts: formatCounts(rep.Conflicts), Error: r.Error}
	if rep.Skipped {
		row.Error = strings.TrimSpace(row.Error + " skipped: " + rep.SkipReason)
	}
	var ops []string
	for _, o := range r.Ops {
		ops = append(ops, o.Op+": "+o.Result)
	}
	row.Ops = strings.Join(ops, ", ")
	return row
}

func formatCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		out = append(out, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(out, ", ")
}

// maintRow is one maintenance operation's state on a table page.
type maintRow struct {
	Op, Last, Totals string
}

// tablePageData is what table.html renders.
type tablePageData struct {
	Version     string
	T           scheduler.TableStatus
	LeaseHolder string
	InspectErr  string
	Inspect     *inspect.Report
	Histogram   template.HTML
	Skew        template.HTML
	Backlog     template.HTML
	Runs        []runRow
	Plan        string
	PlanErr     string
	Maintenance []maintRow
	// TableVersion is the table's version as far as the daemon knows it:
	// the last one polled, else inspect's (a table halted before its
	// first poll has none polled).
	TableVersion string
	// NextRun says when the table runs next (nextRunText).
	NextRun string
	// ShowLastError and ShowPollError are false when that error is the
	// halt's reason, which the page already shows.
	ShowLastError, ShowPollError bool
	// Stuck counts the small files alone in their bins, which no run
	// merges as the table stands.
	Stuck string
}

// leaseHolder says who holds a table's lease, as far as the daemon knows.
func leaseHolder(replica string, t scheduler.TableStatus) string {
	switch {
	case replica == "":
		return "no leases (single replica)"
	case t.State == scheduler.StateRunning:
		return replica + " (this daemon)"
	case t.LastRun != nil && t.LastRun.Report.Skipped && strings.Contains(t.LastRun.Report.SkipReason, "lease"):
		return "another replica (last run skipped)"
	}
	return "none held by " + replica
}

func (d *UI) tablePage(ctx context.Context, t scheduler.TableStatus) tablePageData {
	pd := tablePageData{Version: d.src.Version, T: t, LeaseHolder: leaseHolder(d.src.Replica, t)}
	pts, runs := d.hist.of(t.Name)
	pd.Backlog = backlogChart("backlog-chart", pts)
	for _, r := range runs {
		pd.Runs = append(pd.Runs, runRowOf(r))
	}
	p, ok := d.src.Policy(t.Name)
	switch {
	case !ok:
		pd.InspectErr = "no policy"
	case d.src.Inspect == nil:
		pd.InspectErr = "this daemon's backend does not inspect tables"
	default:
		rep, err := d.src.Inspect(ctx, p)
		if err != nil {
			pd.InspectErr = err.Error()
			break
		}
		pd.Inspect = rep
		var bars []bar
		for _, b := range rep.SizeHistogram {
			bars = append(bars, bar{Label: b.Label, Value: float64(b.Files), Text: fmt.Sprintf("%d", b.Files)})
		}
		pd.Histogram = barChart("size-histogram", "data files by size", bars)
		parts := append([]inspect.Partition(nil), rep.Partitions...)
		sort.SliceStable(parts, func(i, j int) bool { return parts[i].Bytes > parts[j].Bytes })
		bars = nil
		for i, ps := range parts {
			if i == 20 {
				break
			}
			bars = append(bars, bar{Label: partitionLabel(rep.PartitionColumns, ps.Values), Value: float64(ps.Bytes), Text: units.FormatBytes(ps.Bytes)})
		}
		pd.Skew = barChart("partition-skew", "bytes per partition (largest 20)", bars)
	}
	switch {
	case !ok:
	case t.Halted:
		pd.PlanErr = "no plan while the table is halted (the reason is above)"
	default:
		exclude := map[string]bool{}
		for _, q := range t.Quarantined {
			exclude[q] = true
		}
		pl, err := d.src.Plan(ctx, p, exclude)
		if err != nil {
			pd.PlanErr = err.Error()
			break
		}
		b, _ := json.MarshalIndent(pl, "", "  ")
		pd.Plan = string(b)
	}
	pd.Maintenance = maintenanceRows(t)
	pd.NextRun = nextRunText(t, p, ok)
	sameAsHalt := func(e string) bool { return t.Halted && strings.TrimSpace(e) == strings.TrimSpace(t.HaltReason) }
	pd.ShowLastError = t.LastError != "" && !sameAsHalt(t.LastError)
	pd.ShowPollError = t.PollError != "" && !sameAsHalt(t.PollError)
	switch {
	case t.LastVersion >= 0:
		pd.TableVersion = fmt.Sprintf("%d", t.LastVersion)
	case pd.Inspect != nil:
		pd.TableVersion = fmt.Sprintf("%d", pd.Inspect.Version)
	default:
		pd.TableVersion = "not read yet"
	}
	if t.Backlog != nil {
		n, b := stuckOf(t.Backlog)
		pd.Stuck = fileCount(n, b)
	}
	return pd
}

func partitionLabel(cols []string, vals map[string]*string) string {
	if len(cols) == 0 {
		return "(unpartitioned)"
	}
	var out []string
	for _, c := range cols {
		v := "null"
		if p := vals[c]; p != nil {
			v = *p
		}
		out = append(out, c+"="+v)
	}
	return strings.Join(out, "/")
}

// maintenanceRows gives the last result of each operation the last run
// performed and the table's totals for checkpoints, log cleanup and vacuum.
func maintenanceRows(t scheduler.TableStatus) []maintRow {
	last := map[string]string{}
	if t.LastRun != nil {
		for _, o := range t.LastRun.Ops {
			s := o.Result
			if len(o.Report.Done) > 0 {
				s += ": " + strings.Join(o.Report.Done, "; ")
			}
			if o.Error != "" {
				s += ": " + o.Error
			}
			last[o.Op] = s
		}
	}
	c := t.Counters.Counts
	rows := []maintRow{
		{"checkpoint", last[checkpoint.Name], fmt.Sprintf("%d written, %d failed, %s spent", c[checkpoint.CountWritten], c[checkpoint.CountFailed],
			(time.Duration(c[checkpoint.CountDurationMillis]) * time.Millisecond).String())},
		{"log cleanup", last[logcleanup.Name], fmt.Sprintf("%d log files deleted", c[logcleanup.CountFilesDeleted])},
		{"vacuum", last[vacuum.Name], fmt.Sprintf("%d files, %s deleted (%d orphans)", c[vacuum.CountFilesDeleted], units.FormatBytes(c[vacuum.CountBytesDeleted]), c[vacuum.CountOrphans])},
	}
	for i := range rows {
		if rows[i].Last == "" {
			rows[i].Last = "not in the last run"
		}
	}
	return rows
}

// Register adds the HTML view to mux: /, /ui/ (the assets and
// /ui/fleet.json, the fleet page's rows) and /tables/{name}.
func (d *UI) Register(mux *http.ServeMux) {
	pages := d.pages
	assets, _ := fs.Sub(webFiles, "web") // "web" is a directory of webFiles
	static := http.StripPrefix("/ui/", http.FileServerFS(assets))
	mux.Handle("GET /ui/", secureHeaders(static))
	mux.Handle("GET /ui/fleet.json", secureHeaders(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(map[string]any{"now": utc(time.Now()), "tables": fleetRows(d.src.Status(), d.src.Policy)})
	})))
	mux.Handle("GET /{$}", secureHeaders(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		render(w, pages.fleet, map[string]string{"Version": d.src.Version})
	})))
	mux.Handle("GET /tables/{name}", secureHeaders(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		ts := d.src.Status()
		d.hist.observe(ts, time.Now())
		for _, t := range ts {
			if t.Name == name {
				render(w, pages.table, d.tablePage(r.Context(), t))
				return
			}
		}
		http.Error(w, "no such table: "+name, http.StatusNotFound)
	})))
}

// SamplePeriod is how often the web view's history samples the
// scheduler's status (in memory only; cheap).
const SamplePeriod = 2 * time.Second

// Sample feeds the history from the scheduler's status every period until
// ctx ends.
func (d *UI) Sample(ctx context.Context, period time.Duration) {
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		if d.src.Samples != nil {
			d.hist.observeEach(d.src.Samples, time.Now())
		} else {
			d.hist.observe(d.src.Status(), time.Now())
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func secureHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", contentSecurityPolicy)
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		h.ServeHTTP(w, r)
	})
}

func render(w http.ResponseWriter, t *template.Template, data any) {
	var b strings.Builder
	if err := t.Execute(&b, data); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write([]byte(b.String()))
}
