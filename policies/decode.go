package policies

import (
	"fmt"
	"math/big"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/compactord/compactord/internal/units"
)

// The decoder walks hclsyntax bodies itself instead of using gohcl so that
// every attribute keeps its source range: a value that parses but fails
// Validate (strategy = "fast") is still reported at file:line:col.

// attrSetter decodes one attribute into a policy.
type attrSetter func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics

// tableAttrs are the attributes of a table (and defaults) block.
var tableAttrs = map[string]attrSetter{
	"url":                    func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics { return decString(a, &p.URL) },
	"schedule":               func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics { return decString(a, &p.Schedule) },
	"strategy":               func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics { return decString(a, (*string)(&p.Strategy)) },
	"enabled":                func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics { return decBool(a, &p.Enabled) },
	"concurrency":            func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics { return decInt(a, &p.Concurrency) },
	"compression":            func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics { return decString(a, &p.Compression) },
	"target_file_size":       func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics { return decSize(a, &p.TargetFileSize) },
	"min_file_size":          func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics { return decSize(a, &p.MinFileSize) },
	"max_deleted_rows_ratio": func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics { return decFloat(a, &p.MaxDeletedRowsRatio) },
	"settle_window":          func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics { return decDuration(a, &p.SettleWindow) },
	"max_bytes_per_run":      func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics { return decSize(a, &p.MaxBytesPerRun) },
	"max_jobs_per_run":       func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics { return decInt(a, &p.MaxJobsPerRun) },
	"job_order":              func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics { return decString(a, &p.JobOrder) },
	"commit_every_jobs":      func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics { return decInt(a, &p.CommitEveryJobs) },
	"commit_interval":        func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics { return decDuration(a, &p.CommitInterval) },
}

var clusteringAttrs = map[string]attrSetter{
	"columns": func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics { return decColumns(a, &p.Clustering) },
	"lightweight_column": func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics {
		return decString(a, &p.Clustering.LightweightColumn)
	},
	"max_unclustered_bytes": func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics {
		return decSize(a, &p.Clustering.MaxUnclusteredBytes)
	},
	"max_relative_file_range": func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics {
		return decFloat(a, &p.Clustering.MaxRelativeFileRange)
	},
	"min_cube_size": func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics { return decSize(a, &p.Clustering.MinCubeSize) },
	"cube_merge_min_cubes": func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics {
		return decInt(a, &p.Clustering.CubeMergeMinCubes)
	},
}

var triggerAttrs = map[string]attrSetter{
	"small_files": func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics { return decInt(a, &p.Triggers.SmallFiles) },
	"deleted_rows_ratio": func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics {
		return decFloat(a, &p.Triggers.DeletedRowsRatio)
	},
	"unclustered_bytes": func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics {
		return decSize(a, &p.Triggers.UnclusteredBytes)
	},
	"max_time_since_last_run": func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics {
		return decDuration(a, &p.Triggers.MaxTimeSinceLastRun)
	},
}

var retentionAttrs = map[string]attrSetter{
	"column":     func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics { return decString(a, &p.Retention.Column) },
	"older_than": func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics { return decDuration(a, &p.Retention.OlderThan) },
	"time_zone":  func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics { return decString(a, &p.Retention.TimeZone) },
	"epoch_unit": func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics { return decString(a, &p.Retention.EpochUnit) },
	"data_skipping": func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics {
		on := true
		diags := decBool(a, &on)
		p.Retention.NoDataSkipping = !on
		return diags
	},
}

var vacuumAttrs = map[string]attrSetter{
	"mode":            func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics { return decString(a, &p.Vacuum.Mode) },
	"interval":        func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics { return decDuration(a, &p.Vacuum.Interval) },
	"full_interval":   func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics { return decDuration(a, &p.Vacuum.FullInterval) },
	"retention":       func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics { return decDuration(a, &p.Vacuum.Retention) },
	"force_retention": func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics { return decBool(a, &p.Vacuum.ForceRetention) },
	"concurrency":     func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics { return decInt(a, &p.Vacuum.Concurrency) },
}

var statsBackfillAttrs = map[string]attrSetter{
	"max_files": func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics { return decInt(a, &p.StatsBackfill.MaxFiles) },
}

var executorAttrs = map[string]attrSetter{
	"kind": func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics { return decString(a, &p.Executor.Kind) },
	"min_backlog_bytes": func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics {
		return decSize(a, &p.Executor.MinBacklogBytes)
	},
	"parallelism": func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics { return decInt(a, &p.Executor.Parallelism) },
	"backoff_limit_per_index": func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics {
		return decInt(a, &p.Executor.BackoffLimitPerIndex)
	},
	"max_units": func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics { return decInt(a, &p.Executor.MaxUnits) },
}

var checkpointAttrs = map[string]attrSetter{
	"enabled":    func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics { return decBool(a, &p.Checkpoint.Enabled) },
	"catch_up":   func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics { return decBool(a, &p.Checkpoint.CatchUp) },
	"max_behind": func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics { return decInt(a, &p.Checkpoint.MaxBehind) },
}

var fleetAttrs = map[string]attrSetter{
	"quota": func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics { return decFloat(a, &p.Fleet.Quota) },
	"group": func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics { return decString(a, &p.Fleet.Group) },
}

var logCleanupAttrs = map[string]attrSetter{
	"enabled":     func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics { return decBool(a, &p.LogCleanup.Enabled) },
	"concurrency": func(p *Policy, a *hclsyntax.Attribute) hcl.Diagnostics { return decInt(a, &p.LogCleanup.Concurrency) },
}

type daemonSetter func(d *Daemon, a *hclsyntax.Attribute) hcl.Diagnostics

var daemonAttrs = map[string]daemonSetter{
	"poll":             func(d *Daemon, a *hclsyntax.Attribute) hcl.Diagnostics { return decDuration(a, &d.Poll) },
	"workers":          func(d *Daemon, a *hclsyntax.Attribute) hcl.Diagnostics { return decInt(a, &d.Workers) },
	"http":             func(d *Daemon, a *hclsyntax.Attribute) hcl.Diagnostics { return decString(a, &d.HTTP) },
	"shutdown_timeout": func(d *Daemon, a *hclsyntax.Attribute) hcl.Diagnostics { return decDuration(a, &d.ShutdownTimeout) },
	"backoff_base":     func(d *Daemon, a *hclsyntax.Attribute) hcl.Diagnostics { return decDuration(a, &d.BackoffBase) },
	"backoff_max":      func(d *Daemon, a *hclsyntax.Attribute) hcl.Diagnostics { return decDuration(a, &d.BackoffMax) },
	"replica":          func(d *Daemon, a *hclsyntax.Attribute) hcl.Diagnostics { return decString(a, &d.Replica) },
	"lease_ttl":        func(d *Daemon, a *hclsyntax.Attribute) hcl.Diagnostics { return decDuration(a, &d.LeaseTTL) },
	"attempt_stale_after": func(d *Daemon, a *hclsyntax.Attribute) hcl.Diagnostics {
		return decDuration(a, &d.AttemptStaleAfter)
	},
	"group_quotas": func(d *Daemon, a *hclsyntax.Attribute) hcl.Diagnostics { return decFloatMap(a, &d.GroupQuotas) },
}

// ranges remembers where each attribute of a policy was set, keyed by the
// attribute path used in AttrError.
type ranges map[string]hcl.Range

// decodePolicyBody layers the attributes and nested blocks of body over p.
func decodePolicyBody(p *Policy, body *hclsyntax.Body, allowURL bool, where ranges) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, a := range sortedAttrs(body.Attributes) {
		set, ok := tableAttrs[a.Name]
		if !ok || (!allowURL && a.Name == "url") {
			diags = append(diags, unsupported("argument", a.Name, a.NameRange, tableAttrs))
			continue
		}
		where[a.Name] = a.SrcRange
		diags = append(diags, set(p, a)...)
	}
	seen := map[string]hcl.Range{}
	for _, b := range body.Blocks {
		var attrs map[string]attrSetter
		switch b.Type {
		case "clustering":
			attrs = clusteringAttrs
		case "triggers":
			attrs = triggerAttrs
		case "retention":
			attrs = retentionAttrs
			ownBlock(&p.Retention, Retention{})
		case "vacuum":
			attrs = vacuumAttrs
			ownBlock(&p.Vacuum, Vacuum{Mode: VacuumAuto, Interval: DefaultVacuumInterval, FullInterval: DefaultVacuumFullInterval})
		case "stats_backfill":
			attrs = statsBackfillAttrs
			ownBlock(&p.StatsBackfill, StatsBackfill{MaxFiles: DefaultStatsBackfillMaxFiles})
		case "executor":
			attrs = executorAttrs
			ownBlock(&p.Executor, Executor{Kind: ExecutorLocal, Parallelism: DefaultExecutorParallelism, BackoffLimitPerIndex: DefaultExecutorBackoffLimitPerIndex})
		case "checkpoint":
			attrs = checkpointAttrs
		case "log_cleanup":
			attrs = logCleanupAttrs
		case "fleet":
			attrs = fleetAttrs
		default:
			diags = append(diags, errAt(b.TypeRange, "Unsupported block type", "Blocks of type %q are not expected here (want clustering, triggers, retention, vacuum, stats_backfill, executor, checkpoint, log_cleanup or fleet).", b.Type))
			continue
		}
		if prev, dup := seen[b.Type]; dup {
			diags = append(diags, errAt(b.TypeRange, "Duplicate block", "Only one %q block is allowed; the first is at %s.", b.Type, pos(prev)))
			continue
		}
		seen[b.Type] = b.TypeRange
		if len(b.Labels) > 0 {
			diags = append(diags, errAt(b.LabelRanges[0], "Unexpected label", "A %q block takes no labels.", b.Type))
		}
		where[b.Type] = b.TypeRange
		for _, nb := range b.Body.Blocks {
			diags = append(diags, errAt(nb.TypeRange, "Unsupported block type", "Blocks of type %q are not expected in %s.", nb.Type, b.Type))
		}
		for _, a := range sortedAttrs(b.Body.Attributes) {
			set, ok := attrs[a.Name]
			if !ok {
				diags = append(diags, unsupported("argument", a.Name, a.NameRange, attrs))
				continue
			}
			where[b.Type+"."+a.Name] = a.SrcRange
			diags = append(diags, set(p, a)...)
		}
	}
	return diags
}

// ownBlock points *block at a copy of what it points at (the defaults'
// block, shared with other tables), or at def when it is nil, so that a
// table block's attributes change only this policy.
func ownBlock[T any](block **T, def T) {
	if *block != nil {
		def = **block
	}
	*block = &def
}

// decodeDaemonBody layers a daemon block over d.
func decodeDaemonBody(d *Daemon, body *hclsyntax.Body, where ranges) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, a := range sortedAttrs(body.Attributes) {
		set, ok := daemonAttrs[a.Name]
		if !ok {
			diags = append(diags, unsupported("argument", a.Name, a.NameRange, daemonAttrs))
			continue
		}
		where[a.Name] = a.SrcRange
		diags = append(diags, set(d, a)...)
	}
	seenEvents := false
	for _, b := range body.Blocks {
		if b.Type != "events" {
			diags = append(diags, errAt(b.TypeRange, "Unsupported block type", "Blocks of type %q are not expected in daemon (want events).", b.Type))
			continue
		}
		if seenEvents {
			diags = append(diags, errAt(b.TypeRange, "Duplicate block", "Only one %q block is allowed in daemon.", b.Type))
			continue
		}
		seenEvents = true
		if len(b.Labels) > 0 {
			diags = append(diags, errAt(b.LabelRanges[0], "Unexpected label", "A %q block takes no labels.", b.Type))
		}
		for _, nb := range b.Body.Blocks {
			diags = append(diags, errAt(nb.TypeRange, "Unsupported block type", "Blocks of type %q are not expected in events.", nb.Type))
		}
		where["events"] = b.TypeRange
		d.Events = Events{ReconcileInterval: DefaultReconcileInterval}
		for _, a := range sortedAttrs(b.Body.Attributes) {
			set, ok := eventsAttrs[a.Name]
			if !ok {
				diags = append(diags, unsupported("argument", a.Name, a.NameRange, eventsAttrs))
				continue
			}
			where["events."+a.Name] = a.SrcRange
			diags = append(diags, set(&d.Events, a)...)
		}
		if d.Events.URL == "" && !diags.HasErrors() {
			diags = append(diags, errAt(b.TypeRange, "Missing events url", "An events block needs url, the subscription to read (awssqs://, gcppubsub://, azuresb://, rabbit:// or mem://)."))
		}
	}
	return diags
}

var eventsAttrs = map[string]func(e *Events, a *hclsyntax.Attribute) hcl.Diagnostics{
	"url":                func(e *Events, a *hclsyntax.Attribute) hcl.Diagnostics { return decString(a, &e.URL) },
	"reconcile_interval": func(e *Events, a *hclsyntax.Attribute) hcl.Diagnostics { return decDuration(a, &e.ReconcileInterval) },
}

func unsupported[T any](kind, name string, rng hcl.Range, known map[string]T) *hcl.Diagnostic {
	names := make([]string, 0, len(known))
	for k := range known {
		names = append(names, k)
	}
	sort.Strings(names)
	return errAt(rng, "Unsupported "+kind, "An %s named %q is not expected here; known: %s.", kind, name, strings.Join(names, ", "))
}

func sortedAttrs(m hclsyntax.Attributes) []*hclsyntax.Attribute {
	out := make([]*hclsyntax.Attribute, 0, len(m))
	for _, a := range m {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].SrcRange.Start.Byte < out[j].SrcRange.Start.Byte })
	return out
}

func valueOf(a *hclsyntax.Attribute) (cty.Value, hcl.Diagnostics) {
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() {
		return cty.NilVal, diags
	}
	if v.IsNull() || !v.IsKnown() {
		return cty.NilVal, badValue(a, "a value is required")
	}
	return v, nil
}

func badValue(a *hclsyntax.Attribute, format string, args ...any) hcl.Diagnostics {
	return hcl.Diagnostics{errAt(a.Expr.Range(), "Invalid value for "+a.Name, format, args...)}
}

// errAt is an error diagnostic at subject: a summary, and a detail
// formatted as by fmt.Sprintf.
func errAt(subject hcl.Range, summary, format string, args ...any) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  summary,
		Detail:   fmt.Sprintf(format, args...),
		Subject:  subject.Ptr(),
	}
}

// valueOfType is a's value when it has type want; otherwise an error that
// asks for what (e.g. "a string").
func valueOfType(a *hclsyntax.Attribute, want cty.Type, what string) (cty.Value, hcl.Diagnostics) {
	v, diags := valueOf(a)
	if diags != nil {
		return cty.NilVal, diags
	}
	if v.Type() != want {
		return cty.NilVal, badValue(a, "want %s, got %s", what, v.Type().FriendlyName())
	}
	return v, nil
}

func decString(a *hclsyntax.Attribute, dst *string) hcl.Diagnostics {
	v, diags := valueOfType(a, cty.String, "a string")
	if diags != nil {
		return diags
	}
	*dst = v.AsString()
	return nil
}

func decBool(a *hclsyntax.Attribute, dst *bool) hcl.Diagnostics {
	v, diags := valueOfType(a, cty.Bool, "true or false")
	if diags != nil {
		return diags
	}
	*dst = v.True()
	return nil
}

func decInt(a *hclsyntax.Attribute, dst *int) hcl.Diagnostics {
	v, diags := valueOfType(a, cty.Number, "a whole number")
	if diags != nil {
		return diags
	}
	bf := v.AsBigFloat()
	i, acc := bf.Int64()
	if acc != big.Exact || i < -1<<31 || i > 1<<31-1 {
		return badValue(a, "want a whole number, got %s", bf.Text('g', 10))
	}
	*dst = int(i)
	return nil
}

func decFloat(a *hclsyntax.Attribute, dst *float64) hcl.Diagnostics {
	v, diags := valueOfType(a, cty.Number, "a number such as 0.05")
	if diags != nil {
		return diags
	}
	f, _ := v.AsBigFloat().Float64()
	*dst = f
	return nil
}

// decFloatMap decodes an object of numbers such as { etl = 1, adhoc = 0.5 }.
func decFloatMap(a *hclsyntax.Attribute, dst *map[string]float64) hcl.Diagnostics {
	v, diags := valueOf(a)
	if diags != nil {
		return diags
	}
	if !v.Type().IsObjectType() && !v.Type().IsMapType() {
		return badValue(a, "want an object of numbers such as { etl = 1, adhoc = 0.5 }, got %s", v.Type().FriendlyName())
	}
	out := map[string]float64{}
	for it := v.ElementIterator(); it.Next(); {
		k, e := it.Element()
		if e.IsNull() || e.Type() != cty.Number {
			return badValue(a, "want a number for %q, got %s", k.AsString(), e.Type().FriendlyName())
		}
		out[k.AsString()], _ = e.AsBigFloat().Float64()
	}
	*dst = out
	return nil
}

func decStrings(a *hclsyntax.Attribute, dst *[]string) hcl.Diagnostics {
	v, diags := valueOf(a)
	if diags != nil {
		return diags
	}
	if !v.Type().IsTupleType() && !v.Type().IsListType() {
		return badValue(a, "want a list of strings such as [\"a\", \"b\"], got %s", v.Type().FriendlyName())
	}
	var out []string
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if e.IsNull() || e.Type() != cty.String {
			return badValue(a, "want a list of strings; element is %s", e.Type().FriendlyName())
		}
		out = append(out, e.AsString())
	}
	*dst = out
	return nil
}

func decSize(a *hclsyntax.Attribute, dst *int64) hcl.Diagnostics {
	v, diags := valueOf(a)
	if diags != nil {
		return diags
	}
	switch v.Type() {
	case cty.Number:
		// A bare number is a size without a unit: only 0 may be one.
		i, acc := v.AsBigFloat().Int64()
		if acc != big.Exact || i != 0 {
			return badValue(a, "%v", units.UnitlessError(v.AsBigFloat().Text('f', -1)))
		}
		*dst = 0
		return nil
	case cty.String:
		n, err := units.ParseSize(v.AsString())
		if err != nil {
			return badValue(a, "%v", err)
		}
		*dst = n
		return nil
	}
	return badValue(a, "want a size such as \"128MiB\", got %s", v.Type().FriendlyName())
}

func decDuration(a *hclsyntax.Attribute, dst *time.Duration) hcl.Diagnostics {
	v, diags := valueOfType(a, cty.String, "a duration such as \"5m\"")
	if diags != nil {
		return diags
	}
	d, err := units.ParseDuration(v.AsString())
	if err != nil {
		return badValue(a, "%v", err)
	}
	*dst = d
	return nil
}

// decColumns reads clustering.columns: a list of column names, or the
// string "auto" (CLUSTER BY AUTO: the daemon chooses the keys).
func decColumns(a *hclsyntax.Attribute, c *Clustering) hcl.Diagnostics {
	v, diags := valueOf(a)
	if diags != nil {
		return diags
	}
	if v.Type() == cty.String && !v.IsNull() {
		if v.AsString() != "auto" {
			return badValue(a, "want a list of strings such as [\"a\", \"b\"] or \"auto\", got %q", v.AsString())
		}
		c.Auto, c.Columns = true, nil
		return nil
	}
	c.Auto = false
	return decStrings(a, &c.Columns)
}
