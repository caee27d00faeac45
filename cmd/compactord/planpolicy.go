package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/compactord/compactord/compaction"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/internal/daemon"
	"github.com/compactord/compactord/internal/units"
	"github.com/compactord/compactord/planner"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/tableop"
)

// planOnlyFlags are the flags a policy sets, refused beside --policies.
var planOnlyFlags = []string{"strategy", "target-file-size", "min-file-size", "full"}

// planSetup is what plan and compact plan with: the run options (the
// daemon's, from compaction.OptionsFor, under --policies), the open table
// and a description of the policy used.
type planSetup struct {
	// ctx carries the run's retry budget, which the table's open spent
	// from too (as the daemon's runs and parseTable's commands do).
	ctx   context.Context
	opts  compaction.RunOptions
	table *delta.Table
	used  *policyUsed
}

// open parses args (flags and the table URL, optional under --policies),
// builds the run options from the flags or the table's policy, and opens
// the table.
func (p *planFlags) open(ctx context.Context, fs *commandFlags, args []string, log func() hclog.Logger) (*planSetup, error) {
	pos, err := fs.parse(args)
	if err != nil {
		return nil, err
	}
	ctx = p.store.run(ctx)
	if len(pos) > 1 {
		return nil, fmt.Errorf("%w: unexpected arguments %v (usage: compactord %s %s)", errUsage, pos[1:], fs.name, commandSynopsis(fs.name))
	}
	url := ""
	if len(pos) == 1 {
		url = pos[0]
	}
	if p.policies == "" {
		if p.table != "" {
			return nil, fmt.Errorf("%w: --table names a table of --policies DIR, which is missing", errUsage)
		}
		if url == "" {
			return nil, fmt.Errorf("%w: missing table URL (usage: compactord %s %s)", errUsage, fs.name, commandSynopsis(fs.name))
		}
		pol, err := p.policy()
		if err != nil {
			return nil, err
		}
		t, err := p.store.open(ctx, url)
		if err != nil {
			return nil, err
		}
		o := runOptions(log())
		o.Policy = pol
		return &planSetup{ctx: ctx, opts: o, table: t, used: describePolicy("command-line flags", "", pol)}, nil
	}
	var set []string
	fs.Visit(func(f *flag.Flag) {
		if slices.Contains(planOnlyFlags, f.Name) {
			set = append(set, "--"+f.Name)
		}
	})
	if len(set) > 0 {
		return nil, fmt.Errorf("%w: %s cannot be combined with --policies: the table's policy sets them", errUsage, strings.Join(set, ", "))
	}
	pol, err := tablePolicy(p.policies, p.table)
	if err != nil {
		return nil, err
	}
	if url == "" {
		url = pol.URL
	}
	t, err := p.store.open(ctx, url)
	if err != nil {
		return nil, err
	}
	if url != pol.URL {
		if err := sameTable(ctx, p.store, t, pol); err != nil {
			t.Close()
			return nil, err
		}
	}
	o := compaction.OptionsFor(pol, tableop.Env{Logger: log(), EngineInfo: "compactord/" + version}, runOptions(log()))
	return &planSetup{ctx: ctx, opts: o, table: t, used: describePolicy("policy "+pol.Name, pol.Source, o.Policy)}, nil
}

// tablePolicy loads dir and returns the policy of table name (or the
// directory's only table when name is empty).
func tablePolicy(dir, name string) (policies.Policy, error) {
	set, err := daemon.LoadPolicyDir("--policies", dir)
	if err != nil {
		return policies.Policy{}, err
	}
	var names []string
	for _, p := range set.Tables {
		names = append(names, p.Name)
	}
	if name == "" {
		if len(set.Tables) != 1 {
			return policies.Policy{}, fmt.Errorf("%w: %s has %d tables (%s): name one with --table", errUsage, dir, len(set.Tables), strings.Join(names, ", "))
		}
		return set.Tables[0], nil
	}
	pol, ok := set.Table(name)
	if !ok {
		return policies.Policy{}, fmt.Errorf("%w: %s has no table %q (it has: %s)", errUsage, dir, name, strings.Join(names, ", "))
	}
	return pol, nil
}

// sameTable checks that t, opened from the command line's URL, is the
// table of pol's url (compared once both are opened, so /x and file:///x
// are the same).
func sameTable(ctx context.Context, sf *storeFlags, t *delta.Table, pol policies.Policy) error {
	pt, err := sf.open(ctx, pol.URL)
	if err != nil {
		return fmt.Errorf("policy %s: %w", pol.Name, err)
	}
	defer pt.Close()
	if pt.URL != t.URL {
		return fmt.Errorf("%w: table URL %s is not the url of policy %s (%s)", errUsage, t.URL, pol.Name, pt.URL)
	}
	return nil
}

// policyUsed says which planning values a plan or compaction used.
type policyUsed struct {
	// From is "command-line flags" or "policy NAME"; Source is where the
	// policy was declared (file:line:col).
	From                string   `json:"from"`
	Source              string   `json:"source,omitempty"`
	Strategy            string   `json:"strategy"`
	TargetFileSize      string   `json:"targetFileSize"`
	MinFileSize         string   `json:"minFileSize"`
	MaxDeletedRowsRatio float64  `json:"maxDeletedRowsRatio"`
	SettleWindow        string   `json:"settleWindow"`
	MaxJobsPerRun       string   `json:"maxJobsPerRun"`
	MaxBytesPerRun      string   `json:"maxBytesPerRun"`
	JobOrder            string   `json:"jobOrder"`
	ClusteringColumns   []string `json:"clusteringColumns,omitempty"`
}

// describePolicy describes the planner policy pol, zero values as the
// planner reads them.
func describePolicy(from, source string, pol planner.Policy) *policyUsed {
	orDefault := func(v int64, def string) string {
		if v == 0 {
			return def
		}
		return units.FormatBytes(v)
	}
	u := &policyUsed{
		From: from, Source: source,
		Strategy:            string(cmp.Or(pol.Strategy, planner.StrategyAuto)),
		TargetFileSize:      orDefault(pol.TargetFileSize, "default (delta.targetFileSize, else "+units.FormatBytes(planner.DefaultTargetFileSize)+")"),
		MinFileSize:         orDefault(pol.MinFileSize, "default ("+units.FormatBytes(planner.DefaultMinFileSize)+")"),
		MaxDeletedRowsRatio: cmp.Or(pol.MaxDeletedRowsRatio, planner.DefaultMaxDeletedRowsRatio),
		SettleWindow:        "none",
		MaxJobsPerRun:       "unlimited",
		MaxBytesPerRun:      orDefault(pol.MaxBytesPerRun, "unlimited"),
		JobOrder:            string(cmp.Or(pol.JobOrder, planner.JobOrderFilesDesc)),
	}
	if pol.SettleWindow > 0 {
		u.SettleWindow = units.FormatDuration(pol.SettleWindow)
	}
	if pol.MaxJobsPerRun > 0 {
		u.MaxJobsPerRun = strconv.Itoa(pol.MaxJobsPerRun)
	}
	for _, c := range pol.ClusteringColumns {
		u.ClusteringColumns = append(u.ClusteringColumns, strings.Join(c, "."))
	}
	return u
}

// String is the policy line of the human output.
func (u *policyUsed) String() string {
	from := u.From
	if u.Source != "" {
		from += " (" + u.Source + ")"
	}
	s := fmt.Sprintf("%s: strategy %s, target file size %s, min file size %s, max deleted rows ratio %g, settle window %s, max jobs per run %s, max bytes per run %s, job order %s",
		from, u.Strategy, u.TargetFileSize, u.MinFileSize, u.MaxDeletedRowsRatio, u.SettleWindow, u.MaxJobsPerRun, u.MaxBytesPerRun, u.JobOrder)
	if len(u.ClusteringColumns) > 0 {
		s += ", clustering columns " + strings.Join(u.ClusteringColumns, ", ")
	}
	return s
}
