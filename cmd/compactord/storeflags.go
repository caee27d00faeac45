package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/hashicorp/go-hclog"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/objstore"
)

// storeFlags are the object-store deadlines and retries every command that
// reads a table takes (zero: objstore's defaults).
type storeFlags struct {
	opts   objstore.Options
	budget int
	// allowDV are the --allow-external-prefix values
	// (delta.OpenOptions.AllowedExternalPrefixes).
	allowDV []string
	// log, when set, is called at each open for the logger of the log
	// store's warnings (a DynamoDB-coordinated commit left for the next
	// reader to publish); nil discards them.
	log func() hclog.Logger
}

// addStoreFlags registers the --store-* flags on fs.
func addStoreFlags(fs *flag.FlagSet) *storeFlags {
	sf := &storeFlags{}
	d := objstore.DefaultOptions()
	durationFlagVar(fs, &sf.opts.MetadataTimeout, "store-timeout", d.MetadataTimeout, "deadline of one attempt of an object-store call (list, attributes, delete) and of opening a read")
	durationFlagVar(fs, &sf.opts.ReadIdleTimeout, "store-read-idle-timeout", d.ReadIdleTimeout, "how long an object body read may make no progress before it is resumed")
	durationFlagVar(fs, &sf.opts.WriteTimeout, "store-write-timeout", d.WriteTimeout, "deadline of one object write")
	fs.IntVar(&sf.opts.MaxAttempts, "store-attempts", d.MaxAttempts, "attempts of one object-store call, the first included")
	fs.IntVar(&sf.budget, "store-retry-budget", objstore.DefaultRunBudget, "retries of transient object-store failures one run may spend")
	fs.Var(prefixList{&sf.allowDV}, "allow-external-prefix", "an absolute `URI` (file:///dir, s3://bucket/prefix, gs://..., azblob://...) under which a deletion vector of storage type p outside its table's root may be read, with the store's default credentials; repeatable (default: none, such deletion vectors are refused as corrupt)")
	return sf
}

// prefixList is a repeatable flag collecting its values in order.
type prefixList struct{ p *[]string }

// String is empty: workerArgs renders the values one flag each.
func (f prefixList) String() string { return "" }

func (f prefixList) Set(s string) error {
	*f.p = append(*f.p, s)
	return nil
}

// addStoreFlags registers the --store-* flags of a command that opens
// tables, checked as the command's flags are parsed: the tables it opens
// log the log store's warnings with the command's logger (its --log-level
// and --log-format) on stderr.
func (cf *commandFlags) addStoreFlags(stderr io.Writer) *storeFlags {
	sf := cf.addCheckedStoreFlags()
	sf.log = func() hclog.Logger { return cf.logger(stderr) }
	return sf
}

// addCheckedStoreFlags registers the --store-* flags on cf and their
// check (parse fails with a usage error on a negative value).
func (cf *commandFlags) addCheckedStoreFlags() *storeFlags {
	sf := addStoreFlags(cf.FlagSet)
	cf.checks = append(cf.checks, sf.check)
	return sf
}

// check refuses a negative attempt count or retry budget, naming the flag
// (0 is each one's default; the duration flags refuse negative values as
// they parse them).
func (sf *storeFlags) check() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"store-attempts", sf.opts.MaxAttempts}, {"store-retry-budget", sf.budget}} {
		if f.v < 0 {
			return fmt.Errorf("--%s: must not be negative", f.name)
		}
	}
	if err := delta.CheckAllowedPrefixes(sf.allowDV); err != nil {
		return fmt.Errorf("--allow-external-prefix: %w", err)
	}
	return sf.opts.Validate()
}

// parseTable registers the --store-* flags (after the command's own, which
// must be registered already), parses args as one table URL, and returns
// the URL, the store flags, and ctx carrying the run's retry budget.
func (cf *commandFlags) parseTable(ctx context.Context, args []string, stderr io.Writer) (context.Context, string, *storeFlags, error) {
	store := cf.addStoreFlags(stderr)
	url, err := cf.parseOne(args, "table URL")
	if err != nil {
		return ctx, "", nil, err
	}
	return store.run(ctx), url, store, nil
}

// workerArgs are the flags that give a fanned-out run's workers (`run-unit`)
// the same store settings: each --store-* flag whose value differs from its
// default, as "--name=value", rendered by the flag.Values addStoreFlags
// registers (nil for a nil sf or all defaults). A flag left at its default
// is left out, so the worker takes its own, which is objstore's as here.
func (sf *storeFlags) workerArgs() []string {
	if sf == nil {
		return nil
	}
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	cp := addStoreFlags(fs)
	cp.opts, cp.budget = sf.opts, sf.budget
	var args []string
	fs.VisitAll(func(f *flag.Flag) {
		// A zero duration reads as "" and means objstore's default.
		if v := f.Value.String(); v != f.DefValue && v != "" {
			args = append(args, "--"+f.Name+"="+v)
		}
	})
	for _, p := range sf.allowDV {
		args = append(args, "--allow-external-prefix="+p)
	}
	return args
}

// openOptions are the delta.OpenOptions of the flags.
func (sf *storeFlags) openOptions() delta.OpenOptions {
	o := sf.opts
	o.OpenTimeout = o.MetadataTimeout
	opts := delta.OpenOptions{Store: o, AllowedExternalPrefixes: sf.allowDV}
	if sf.log != nil {
		opts.Logger = sf.log().Named("logstore")
	}
	return opts
}

// run returns ctx carrying a fresh retry budget for one run.
func (sf *storeFlags) run(ctx context.Context) context.Context {
	return objstore.WithBudget(ctx, objstore.NewBudget(sf.budget))
}

// open opens the table at url with the flags' options.
func (sf *storeFlags) open(ctx context.Context, url string) (*delta.Table, error) {
	return delta.OpenTableWith(ctx, url, sf.openOptions())
}
