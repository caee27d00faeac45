package policies

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/compactord/compactord/internal/redact"
)

// Set is the content of one policy directory.
type Set struct {
	// Daemon holds the process settings (defaults when no daemon block).
	Daemon Daemon `json:"daemon"`
	// Tables are the effective table policies, sorted by name.
	Tables []Policy `json:"tables"`
	// Warnings are problems that do not stop the daemon (a schedule that
	// never fires), each at file:line:col where it has
	// one; `check` prints them and `run` logs them.
	Warnings hcl.Diagnostics `json:"-"`
}

// Table returns the policy named name.
func (s *Set) Table(name string) (Policy, bool) {
	for _, p := range s.Tables {
		if p.Name == name {
			return p, true
		}
	}
	return Policy{}, false
}

// Error is a policy error: one or more diagnostics, each with file:line:col.
type Error struct {
	// Diags are the error diagnostics, in file order.
	Diags hcl.Diagnostics
}

// Error lists every diagnostic, one per line.
func (e *Error) Error() string {
	lines := make([]string, 0, len(e.Diags))
	for _, d := range e.Diags {
		lines = append(lines, FormatDiagnostic(d))
	}
	return strings.Join(lines, "\n")
}

// FormatDiagnostic renders one diagnostic as "file:line:col: summary; detail".
func FormatDiagnostic(d *hcl.Diagnostic) string {
	var b strings.Builder
	if d.Subject != nil {
		fmt.Fprintf(&b, "%s:%d:%d: ", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column)
	}
	b.WriteString(d.Summary)
	if d.Detail != "" {
		b.WriteString("; ")
		b.WriteString(d.Detail)
	}
	return b.String()
}

// LoadDir reads every *.hcl file in dir (not recursively) and returns the
// effective policies. Any error in the files is an *Error listing every
// problem found. A dir that is a file is a *NotDirError; a dir that cannot
// be read fails with the system's reason (permission denied, ...); a dir
// without *.hcl files fails with ErrNoPolicies: a daemon with no table to
// run is never what was meant.
func LoadDir(dir string) (*Set, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("policy directory: %w", err)
	}
	if !fi.IsDir() {
		return nil, &NotDirError{Path: dir}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read policy directory %s: %w", dir, err)
	}
	var names, others []string
	for _, e := range entries {
		switch {
		case !e.IsDir() && strings.HasSuffix(e.Name(), ".hcl"):
			names = append(names, filepath.Join(dir, e.Name()))
		case !strings.HasPrefix(e.Name(), "."):
			others = append(others, e.Name())
		}
	}
	if len(names) == 0 {
		return nil, noPolicies(dir, others)
	}
	files := make(map[string][]byte, len(names))
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			return nil, fmt.Errorf("read policy %s: %w", n, err)
		}
		files[n] = b
	}
	return Parse(files)
}

// ErrNoPolicies is LoadDir's error for a directory without *.hcl files.
var ErrNoPolicies = errors.New("no policies")

// noPolicies is the ErrNoPolicies error of dir, naming a few of the other
// entries it holds (a policy saved as .HCL or .txt is a common slip).
func noPolicies(dir string, others []string) error {
	holds := "it is empty"
	if len(others) > 0 {
		const show = 5
		list := strings.Join(others[:min(show, len(others))], ", ")
		if len(others) > show {
			list += fmt.Sprintf(" and %d more", len(others)-show)
		}
		holds = "it holds " + list
	}
	return fmt.Errorf("%w: %s has no *.hcl files (%s); put a table block in a file ending in .hcl there, e.g. table \"events\" { url = \"s3://bucket/events\" } (examples/policies has more)", ErrNoPolicies, dir, holds)
}

// NotDirError is LoadDir's error for a path that is a file, not a
// directory of policy files.
type NotDirError struct {
	// Path is the path as given.
	Path string
}

// Error says what was given and names the directory that holds it.
func (e *NotDirError) Error() string {
	return fmt.Sprintf("%s is a file, not a directory of .hcl files (its directory is %s)", e.Path, e.Dir())
}

// Dir is the directory holding Path, absolute when it can be made so.
func (e *NotDirError) Dir() string {
	d := filepath.Dir(e.Path)
	if abs, err := filepath.Abs(d); err == nil {
		return abs
	}
	return d
}

// Parse decodes policy files given by name. The daemon and defaults blocks
// apply to every table regardless of which file declares them.
func Parse(files map[string][]byte) (*Set, error) {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)

	var diags hcl.Diagnostics
	bodies := make([]*hclsyntax.Body, 0, len(names))
	for _, n := range names {
		f, d := hclsyntax.ParseConfig(files[n], n, hcl.InitialPos)
		diags = append(diags, d...)
		if f == nil || d.HasErrors() {
			continue
		}
		bodies = append(bodies, f.Body.(*hclsyntax.Body))
	}
	if diags.HasErrors() {
		return nil, &Error{Diags: errorsOnly(diags)}
	}

	set := &Set{Daemon: DefaultDaemon()}
	defaults := DefaultPolicy()
	defaultsWhere := ranges{}
	daemonWhere := ranges{}
	var daemonRange, defaultsRange *hcl.Range
	type tableBlock struct {
		block *hclsyntax.Block
	}
	var tables []tableBlock

	// Pass 1: top level shape, daemon and defaults blocks.
	for _, body := range bodies {
		for _, a := range sortedAttrs(body.Attributes) {
			diags = append(diags, errAt(a.NameRange, "Unsupported argument", "%q is not expected at the top level; put it inside a table, defaults or daemon block.", a.Name))
		}
		for _, b := range body.Blocks {
			switch b.Type {
			case "table":
				if len(b.Labels) != 1 || b.Labels[0] == "" {
					diags = append(diags, errAt(b.TypeRange, "Missing table name", `A table block has exactly one label: table "events" { ... }.`))
					continue
				}
				tables = append(tables, tableBlock{block: b})
			case "daemon", "defaults":
				if len(b.Labels) > 0 {
					diags = append(diags, errAt(b.LabelRanges[0], "Unexpected label", "A %s block takes no labels.", b.Type))
					continue
				}
				prev := &daemonRange
				if b.Type == "defaults" {
					prev = &defaultsRange
				}
				if *prev != nil {
					diags = append(diags, errAt(b.TypeRange, "Duplicate "+b.Type+" block", "Only one %s block is allowed per directory; the first is at %s.", b.Type, pos(**prev)))
					continue
				}
				r := b.TypeRange
				*prev = &r
				if b.Type == "daemon" {
					diags = append(diags, decodeDaemonBody(&set.Daemon, b.Body, daemonWhere)...)
				} else {
					diags = append(diags, decodePolicyBody(&defaults, b.Body, false, defaultsWhere)...)
				}
			default:
				diags = append(diags, errAt(b.TypeRange, "Unsupported block type", "Blocks of type %q are not expected here (want table, defaults or daemon).", b.Type))
			}
		}
	}
	if daemonRange != nil {
		diags = append(diags, validationDiags(set.Daemon.Validate(), daemonWhere, *daemonRange)...)
	}

	// Pass 2: tables layered over the defaults.
	seen := map[string]hcl.Range{}
	// seenURL maps a table identity (TableIdentity) to its first policy.
	type firstURL struct {
		name, url string
		at        hcl.Range
	}
	seenURL := map[string]firstURL{}
	for _, tb := range tables {
		b := tb.block
		name := b.Labels[0]
		if prev, dup := seen[name]; dup {
			diags = append(diags, errAt(b.LabelRanges[0], "Duplicate table", "Table %q is already declared at %s.", name, pos(prev)))
			continue
		}
		seen[name] = b.LabelRanges[0]
		p := clonePolicy(defaults)
		p.Name = name
		p.Source = pos(b.TypeRange)
		where := ranges{}
		d := decodePolicyBody(&p, b.Body, true, where)
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		for k, r := range defaultsWhere {
			if _, ok := where[k]; !ok {
				where[k] = r
			}
		}
		if _, ok := where["url"]; !ok {
			where["url"] = b.LabelRanges[0]
		}
		verr := p.Validate()
		diags = append(diags, validationDiags(verr, where, b.TypeRange)...)
		if verr == nil && p.Schedule != "" && neverFires(p.Schedule, time.Now()) {
			r := b.TypeRange
			if sr, ok := where["schedule"]; ok {
				r = sr
			}
			set.Warnings = append(set.Warnings, &hcl.Diagnostic{
				Severity: hcl.DiagWarning,
				Summary:  "Schedule never fires",
				Detail:   fmt.Sprintf("Table %q: schedule %q never fires (no matching time in the next 5 years); the table runs only on triggers, signals and the API.", name, p.Schedule),
				Subject:  r.Ptr(),
			})
		}
		if id := TableIdentity(p.URL); p.URL != "" {
			// Two policies on one table (under any two spellings) would
			// defeat one-run-per-table.
			if other, dup := seenURL[id]; dup {
				diags = append(diags, errAt(where["url"], "Duplicate table url",
					"Table %q has the same url as table %q (at %s): %s and %s name one table; one table, one policy.",
					name, other.name, pos(other.at), redact.URL(p.URL), redact.URL(other.url)))
			} else {
				seenURL[id] = firstURL{name: name, url: p.URL, at: where["url"]}
			}
		}
		set.Tables = append(set.Tables, p)
	}
	if diags.HasErrors() {
		return nil, &Error{Diags: errorsOnly(diags)}
	}
	sort.Slice(set.Tables, func(i, j int) bool { return set.Tables[i].Name < set.Tables[j].Name })
	return set, nil
}

// validationDiags turns Validate's joined AttrErrors into diagnostics at the
// attribute's range (or fallback when it came from a default).
func validationDiags(err error, where ranges, fallback hcl.Range) hcl.Diagnostics {
	if err == nil {
		return nil
	}
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	var diags hcl.Diagnostics
	for _, e := range errs {
		rng := fallback
		summary := "Invalid policy"
		var ae *AttrError
		if errors.As(e, &ae) {
			summary = "Invalid value for " + ae.Attr
			for path := ae.Attr; path != ""; {
				if r, ok := where[path]; ok {
					rng = r
					break
				}
				i := strings.LastIndexByte(path, '.')
				if i < 0 {
					break
				}
				path = path[:i]
			}
		}
		diags = append(diags, errAt(rng, summary, "%s", e.Error()))
	}
	return diags
}

// pos renders the start of a range as file:line:col.
func pos(r hcl.Range) string {
	return fmt.Sprintf("%s:%d:%d", r.Filename, r.Start.Line, r.Start.Column)
}

func errorsOnly(diags hcl.Diagnostics) hcl.Diagnostics {
	var out hcl.Diagnostics
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			out = append(out, d)
		}
	}
	return out
}

func clonePolicy(p Policy) Policy {
	c := p
	c.Clustering.Columns = append([]string(nil), p.Clustering.Columns...)
	if p.Retention != nil {
		r := *p.Retention
		c.Retention = &r
	}
	if p.Vacuum != nil {
		v := *p.Vacuum
		c.Vacuum = &v
	}
	if p.StatsBackfill != nil {
		v := *p.StatsBackfill
		c.StatsBackfill = &v
	}
	return c
}
