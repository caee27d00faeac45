package vacuum

import (
	"fmt"
	"strings"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	deltadv "github.com/compactord/compactord/delta/dv"
	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/delta/schema"
	"github.com/compactord/compactord/internal/attempt"
	"github.com/compactord/compactord/internal/tablepath"
)

// hiddenRule decides which names the full listing skips, as Spark's
// DeltaTableUtils.isHiddenDirectory: names starting with "_" or "." are
// hidden, except _delta_index*, _change_data* and partition directories
// ("col=value"); "metadata" is hidden on UniForm (Iceberg) tables.
type hiddenRule struct {
	partitionPrefixes []string // "col=" per partition column (logical and physical names)
	icebergMetadata   bool
}

func newHiddenRule(snap *delta.Snapshot) hiddenRule {
	r := hiddenRule{}
	seen := map[string]bool{}
	add := func(name string) {
		if name != "" && !seen[name] {
			seen[name] = true
			r.partitionPrefixes = append(r.partitionPrefixes, name+"=")
		}
	}
	for _, c := range snap.Metadata.PartitionColumns {
		add(c)
		if snap.Schema != nil {
			if f := snap.Schema.Field(c); f != nil {
				add(schema.PhysicalName(f))
			}
		}
	}
	for _, f := range snap.Properties().UniversalFormats {
		if strings.EqualFold(f, "iceberg") {
			r.icebergMetadata = true
		}
	}
	return r
}

// hidden reports whether one path component (a directory or file name) is
// hidden from vacuum.
func (r hiddenRule) hidden(name string) bool {
	if r.icebergMetadata && name == "metadata" {
		return true
	}
	if !strings.HasPrefix(name, ".") && !strings.HasPrefix(name, "_") {
		return false
	}
	if strings.HasPrefix(name, "_delta_index") || strings.HasPrefix(name, "_change_data") {
		return false
	}
	for _, p := range r.partitionPrefixes {
		if strings.HasPrefix(name, p) {
			return false
		}
	}
	return true
}

// hiddenKey reports whether any component of a key relative to the table
// root is hidden.
func (r hiddenRule) hiddenKey(key string) bool {
	for _, c := range strings.Split(key, "/") {
		if c != "" && r.hidden(c) {
			return true
		}
	}
	return false
}

// IsTempLeftover reports whether the base name of key is the temp file of
// an interrupted write (see the package doc and attempt.IsTempLeftover).
// Such a file is never the target of a log reference; the sweep deletes it
// once it is older than the retention cutoff.
func IsTempLeftover(key string) bool { return attempt.IsTempLeftover(key) }

// tempSweepDirs are the hidden directories whose temp leftovers the sweep
// removes, listed shallowly (their subdirectories, such as the DynamoDB log
// store's _delta_log/.tmp/ whose files may still be needed to repair a
// commit, are not entered).
var tempSweepDirs = []string{logpath.LogDir, "_compactord/"}

// resolver turns the paths of file actions into canonical keys relative
// to the table root (tablepath).
type resolver struct {
	table string // for errors
	root  tablepath.Root
}

func newResolver(tableURL string) (*resolver, error) {
	root, err := tablepath.ParseRoot(tableURL)
	if err != nil {
		return nil, fmt.Errorf("vacuum %s: %w", tableURL, err)
	}
	return &resolver{table: tableURL, root: root}, nil
}

// key returns the canonical object key of a file action's path relative
// to the table root. inside is false for a path outside the table (an
// absolute URI elsewhere, or one climbing above the root): never deleted,
// and it protects nothing inside. An absolute path this build cannot
// relate to the root (another URI form of the same store) is an error:
// guessing could delete a referenced file.
func (r *resolver) key(logPath string) (key string, inside bool, err error) {
	ref, err := r.root.Resolve(logPath)
	if err != nil {
		return "", false, fmt.Errorf("vacuum %s: file action %w; refusing to vacuum", r.table, err)
	}
	return ref.Key, ref.Inside(), nil
}

// dvKey returns the key of a deletion vector's file when it is one vacuum
// manages: only "u" (relative) vectors; "p" (absolute) files are never
// deleted nor protected here, "i" has no file.
func dvKey(dv *actions.DeletionVector) (string, bool, error) {
	if dv == nil || dv.StorageType != "u" {
		return "", false, nil
	}
	k, err := deltadv.DVFileKey(dv.PathOrInlineDv)
	if err != nil {
		return "", false, err
	}
	return k, true, nil
}
