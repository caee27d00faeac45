package delta

import (
	"errors"
	"fmt"
	"sort"
	"strconv"

	"github.com/compactord/compactord/failure"
)

// UnsupportedFeatureError says which part of a table's protocol this build
// does not implement. Match it with errors.As.
type UnsupportedFeatureError struct {
	// Feature is the table feature name ("rowTracking", "blahabl"), or
	// "minReaderVersion=N" / "minWriterVersion=N" for a protocol version
	// beyond what this build knows.
	Feature string
	// Kind is "reader" or "writer": the feature list (or version) it was
	// found in, and so whether reading or only writing is affected.
	Kind string
	// Reason says why this build refuses it.
	Reason string
}

func (e *UnsupportedFeatureError) Error() string {
	return fmt.Sprintf("unsupported %s table feature %q: %s", e.Kind, e.Feature, e.Reason)
}

// FailureClass is Halt: a table this build cannot read or write correctly
// stays untouched until the build or the table changes.
func (e *UnsupportedFeatureError) FailureClass() failure.Class { return failure.Halt }

// Feature kinds of UnsupportedFeatureError.
const (
	KindReader = "reader"
	KindWriter = "writer"
)

// readableFeatures are the reader features this build reads correctly.
func readableFeatures() map[string]bool {
	return map[string]bool{
		"columnMapping":        true,
		"deletionVectors":      true,
		"timestampNtz":         true,
		"v2Checkpoint":         true,
		"vacuumProtocolCheck":  true,
		"typeWidening":         true,
		"typeWidening-preview": true,
	}
}

// writableFeatures are the writer features whose obligations a
// file-rewriting writer (dataChange=false only) meets in this build.
func writableFeatures() map[string]bool {
	return map[string]bool{
		"appendOnly":           true, // rewrites use dataChange=false only
		"invariants":           true, // values copied unchanged
		"checkConstraints":     true,
		"changeDataFeed":       true, // compaction writes no CDC files
		"generatedColumns":     true,
		"allowColumnDefaults":  true,
		"columnMapping":        true, // physical names and field ids
		"identityColumns":      true, // high-water mark untouched
		"deletionVectors":      true,
		"domainMetadata":       true, // all domains preserved
		"v2Checkpoint":         true, // checkpoints are classic single-file or UUID-named V2, never multi-part
		"timestampNtz":         true,
		"vacuumProtocolCheck":  true,
		"typeWidening":         true, // rewritten files use the current type
		"typeWidening-preview": true,
		"inCommitTimestamp":    true, // commitInfo first with monotonic ICT
		"clustering":           true, // clusteringProvider kept on outputs
		// liquid is DBR's preview name of clustering (domain delta.liquid,
		// read by ClusteringColumns): its obligations are clustering's.
		"liquid":      true,
		"rowTracking": true, // fresh baseRowId ranges and the high-water mark at commit (delta.AssignRowIDs); stable ids materialized in rewritten files
	}
}

// refusalReasons explains known features that this build refuses on
// purpose; everything else unknown gets a generic reason.
func refusalReasons() map[string]string {
	return map[string]string{
		"icebergCompatV1":             "Iceberg compatibility obligations (materialized partition values, nested ids) are not implemented",
		"icebergCompatV2":             "Iceberg compatibility obligations (materialized partition values, nested ids) are not implemented",
		"icebergCompatV3":             "Iceberg compatibility obligations are not implemented",
		"variantType":                 "variant columns are not implemented",
		"variantType-preview":         "variant columns are not implemented",
		"variantShredding":            "variant shredding is not implemented",
		"variantShredding-preview":    "variant shredding is not implemented",
		"materializePartitionColumns": "partition values materialized in data files are not written by this build",
		"catalogManaged":              "commits must go through the table's catalog, never the file system",
		"catalogOwned-preview":        "commits must go through the table's catalog, never the file system",
		"coordinatedCommits-preview":  "commits must go through the table's commit coordinator",
	}
}

func unsupported(name, kind string) *UnsupportedFeatureError {
	reason, ok := refusalReasons()[name]
	if !ok {
		reason = "not implemented by this build"
	}
	return &UnsupportedFeatureError{Feature: name, Kind: kind, Reason: reason}
}

// Readable returns nil when this build can read the snapshot's table
// correctly, else an error joining one *UnsupportedFeatureError per
// unsupported reader feature (or reader version above 3).
func Readable(s *Snapshot) error {
	p := s.Protocol
	var errs []error
	if p.MinReaderVersion > 3 || p.MinReaderVersion < 1 {
		errs = append(errs, &UnsupportedFeatureError{Feature: "minReaderVersion=" + strconv.Itoa(p.MinReaderVersion), Kind: KindReader,
			Reason: "this build reads protocol reader versions 1 to 3"})
	}
	ok := readableFeatures()
	for _, f := range p.EffectiveReaderFeatures() {
		if !ok[f] {
			errs = append(errs, unsupported(f, KindReader))
		}
	}
	return errors.Join(errs...)
}

// Writable returns nil when compactord may rewrite files of the snapshot's
// table (commits with dataChange=false only), else an error joining one
// *UnsupportedFeatureError per feature this build does not implement:
// unknown or unimplemented reader features (the rewrite must read the
// table), reader version above 3, writer version above 7, and every writer
// feature outside the implemented list (see SupportedWriterFeatures) —
// icebergCompat*, variant*, materializePartitionColumns,
// catalogManaged and coordinated commits are refused explicitly.
func Writable(s *Snapshot) error {
	ok := writableFeatures()
	readerOK := readableFeatures()
	var readerErrs []error
	for _, f := range s.Protocol.EffectiveReaderFeatures() {
		// Reader features that only affect reading are covered by
		// Readable; the few whose write obligations differ are checked here.
		if readerOK[f] && !ok[f] {
			readerErrs = append(readerErrs, unsupported(f, KindWriter))
		}
	}
	return writeGate(s, readerErrs, func(f string) bool { return ok[f] })
}

// writeGate joins the checks every kind of write shares: the table must
// read correctly (Readable), its writer version be one this build writes
// (1 to 7), then the caller's own findings, then one error per writer
// feature that allowed refuses.
func writeGate(s *Snapshot, found []error, allowed func(feature string) bool) error {
	var errs []error
	if err := Readable(s); err != nil {
		errs = append(errs, err)
	}
	if v := s.Protocol.MinWriterVersion; v > 7 || v < 1 {
		errs = append(errs, &UnsupportedFeatureError{Feature: "minWriterVersion=" + strconv.Itoa(v), Kind: KindWriter,
			Reason: "this build writes protocol writer versions 1 to 7"})
	}
	errs = append(errs, found...)
	for _, f := range s.Protocol.EffectiveWriterFeatures() {
		if !allowed(f) {
			errs = append(errs, unsupported(f, KindWriter))
		}
	}
	return errors.Join(errs...)
}

// SupportedWriterFeatures lists, sorted, the writer features Writable
// accepts.
func SupportedWriterFeatures() []string {
	var out []string
	for f := range writableFeatures() {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}
