package composition

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Tag keys of the source-composition format on a compaction's remove
// actions. Both values are JSON arrays encoded as strings, parallel lists:
//
//	compactedInto  = ["<output path>", ...]
//	compactionInfo = [{"rowOffsetInTarget":N,"sourceNumPhysicalRecords":M}, ...]
//
// The format is the one Databricks Runtime writes; the Delta protocol
// ignores unknown remove tags, so other readers are unaffected.
const (
	TagCompactedInto  = "compactedInto"
	TagCompactionInfo = "compactionInfo"
)

// ErrNoTags means a remove carries neither composition tag.
var ErrNoTags = errors.New("no compactedInto/compactionInfo tags")

// compactionInfo is one compactionInfo entry, fields in the order
// Databricks writes them.
type compactionInfo struct {
	RowOffsetInTarget        *int64 `json:"rowOffsetInTarget"`
	SourceNumPhysicalRecords *int64 `json:"sourceNumPhysicalRecords"`
}

// HasTags reports whether tags carry a composition (a non-empty
// compactedInto); Parse says whether it is usable.
func HasTags(tags map[string]string) bool { return tags[TagCompactedInto] != "" }

// Encode returns the compactedInto and compactionInfo tag values of a
// source's runs (our writer never splits a source, so one run). Each run
// needs its Target and non-negative offsets.
func Encode(runs ...Run) (compactedInto, compactionInfoTag string, err error) {
	if len(runs) == 0 {
		return "", "", errors.New("encode composition tags: no run")
	}
	into := make([]string, len(runs))
	info := make([]compactionInfo, len(runs))
	for i, r := range runs {
		if r.Target == "" {
			return "", "", fmt.Errorf("encode composition tags of %s: run %d has no target", r.Source, i)
		}
		if r.RowOffsetInTarget < 0 || r.SourceNumPhysicalRecords < 0 {
			return "", "", fmt.Errorf("encode composition tags of %s: negative offset %d or physical count %d",
				r.Source, r.RowOffsetInTarget, r.SourceNumPhysicalRecords)
		}
		into[i] = r.Target
		info[i] = compactionInfo{RowOffsetInTarget: &r.RowOffsetInTarget, SourceNumPhysicalRecords: &r.SourceNumPhysicalRecords}
	}
	a, err := json.Marshal(into)
	if err != nil {
		return "", "", fmt.Errorf("encode %s of %s: %w", TagCompactedInto, runs[0].Source, err)
	}
	b, err := json.Marshal(info)
	if err != nil {
		return "", "", fmt.Errorf("encode %s of %s: %w", TagCompactionInfo, runs[0].Source, err)
	}
	return string(a), string(b), nil
}

// Parse reads the composition tags of source's remove: one Run per target,
// in list order, with Output and LiveRows Unknown (the live run length
// follows from the read-time DV: Forward derives it). It returns ErrNoTags
// when neither tag is present, and an error for anything it cannot trust:
// one tag without the other, lists of different or zero length, an entry
// without both numbers, negative numbers, an empty target.
func Parse(source string, tags map[string]string) ([]Run, error) {
	rawInto, okInto := tags[TagCompactedInto]
	rawInfo, okInfo := tags[TagCompactionInfo]
	switch {
	case !okInto && !okInfo:
		return nil, ErrNoTags
	case !okInto || !okInfo:
		return nil, fmt.Errorf("composition tags of %s: only one of %s and %s", source, TagCompactedInto, TagCompactionInfo)
	}
	var into []string
	if err := json.Unmarshal([]byte(rawInto), &into); err != nil {
		return nil, fmt.Errorf("parse %s tag of %s: %w", TagCompactedInto, source, err)
	}
	var info []compactionInfo
	if err := json.Unmarshal([]byte(rawInfo), &info); err != nil {
		return nil, fmt.Errorf("parse %s tag of %s: %w", TagCompactionInfo, source, err)
	}
	if len(into) != len(info) || len(into) == 0 {
		return nil, fmt.Errorf("composition tags of %s list %d targets but %d entries", source, len(into), len(info))
	}
	out := make([]Run, len(into))
	for i := range into {
		e := info[i]
		switch {
		case e.RowOffsetInTarget == nil || e.SourceNumPhysicalRecords == nil:
			return nil, fmt.Errorf("%s entry %d of %s lacks rowOffsetInTarget or sourceNumPhysicalRecords", TagCompactionInfo, i, source)
		case *e.RowOffsetInTarget < 0 || *e.SourceNumPhysicalRecords < 0:
			return nil, fmt.Errorf("%s entry %d of %s has a negative number", TagCompactionInfo, i, source)
		case into[i] == "":
			return nil, fmt.Errorf("%s entry %d of %s is empty", TagCompactedInto, i, source)
		}
		out[i] = Run{
			Source:                   source,
			Target:                   into[i],
			Output:                   Unknown,
			RowOffsetInTarget:        *e.RowOffsetInTarget,
			SourceNumPhysicalRecords: *e.SourceNumPhysicalRecords,
			LiveRows:                 Unknown,
		}
	}
	return out, nil
}
