package delta

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	deltaactions "github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/stats"
)

// checkpointSchema is the compiled schema of one checkpoint file.
type checkpointSchema struct {
	root        *pqNode
	tops        map[string]*pqNode
	add, remove *fileNodes
	ncols       int // leaf columns of the file
	// columns, when set, is what readColumnRange reads of this file (nil:
	// every chunk is read row by row).
	columns *columnPlan
}

// fileNodes are the columns of an add or remove struct, resolved once per
// file so that the (many) file actions are read without intermediate maps.
type fileNodes struct {
	node                                                       *pqNode
	path, size, modTime, dataChange, stats, clusteringProvider *pqNode
	baseRowID, defaultRCV, deletionTimestamp, extendedMeta     *pqNode
	pv, tags, pvParsed, statsParsed                            *pqNode
	dv                                                         *pqNode
	dvStorage, dvPath, dvOffset, dvSize, dvCard                *pqNode
	dvOther, other                                             []*pqNode
}

func compileCheckpoint(root *pqNode) *checkpointSchema {
	cs := &checkpointSchema{root: root, tops: map[string]*pqNode{}}
	for _, c := range root.fields {
		cs.tops[c.name] = c
	}
	if n := cs.tops[deltaactions.KindAdd]; n != nil && !n.leaf && n.repeated == nil {
		cs.add = compileFileNodes(n)
	}
	if n := cs.tops[deltaactions.KindRemove]; n != nil && !n.leaf && n.repeated == nil {
		cs.remove = compileFileNodes(n)
	}
	return cs
}

func compileFileNodes(n *pqNode) *fileNodes {
	fn := &fileNodes{node: n}
	for _, c := range n.fields {
		slot := map[string]**pqNode{
			"path": &fn.path, "size": &fn.size, "modificationTime": &fn.modTime, "dataChange": &fn.dataChange,
			"stats": &fn.stats, "clusteringProvider": &fn.clusteringProvider, "baseRowId": &fn.baseRowID,
			"defaultRowCommitVersion": &fn.defaultRCV, "deletionTimestamp": &fn.deletionTimestamp,
			"extendedFileMetadata": &fn.extendedMeta, "partitionValues": &fn.pv, "tags": &fn.tags,
			"partitionValues_parsed": &fn.pvParsed, "stats_parsed": &fn.statsParsed, "deletionVector": &fn.dv,
		}[c.name]
		if slot == nil {
			fn.other = append(fn.other, c)
			continue
		}
		*slot = c
	}
	if fn.dv != nil {
		for _, c := range fn.dv.fields {
			slot := map[string]**pqNode{"storageType": &fn.dvStorage, "pathOrInlineDv": &fn.dvPath, "offset": &fn.dvOffset,
				"sizeInBytes": &fn.dvSize, "cardinality": &fn.dvCard}[c.name]
			if slot == nil {
				fn.dvOther = append(fn.dvOther, c)
				continue
			}
			*slot = c
		}
	}
	return fn
}

// rowAction converts the one non-null top-level action column of a row.
func (cs *checkpointSchema) rowAction(rv *rowView) (deltaactions.Action, bool, error) {
	var a deltaactions.Action
	found := ""
	for _, top := range cs.root.fields {
		if top.leaf || top.repeated != nil || top.skip || !rv.present(top) {
			continue
		}
		if top.name == deltaactions.KindCommitInfo {
			continue // never in checkpoints; ignore if a writer put it there
		}
		if found != "" {
			return a, false, fmt.Errorf("row holds two actions (%s and %s)", found, top.name)
		}
		found = top.name
		var err error
		switch top.name {
		case deltaactions.KindAdd:
			a.Add, err = cs.add.readAdd(rv)
		case deltaactions.KindRemove:
			a.Remove, err = cs.remove.readRemove(rv)
		default:
			var v any
			if v, err = rv.assemble(top); err != nil {
				break
			}
			m, _ := v.(map[string]any)
			switch top.name {
			case deltaactions.KindMetadata, deltaactions.KindProtocol, deltaactions.KindTxn, deltaactions.KindDomainMetadata, deltaactions.KindCheckpointMetadata, deltaactions.KindSidecar, deltaactions.KindCDC:
				a, err = actionViaJSON(top.name, m)
			default:
				var b []byte
				if b, err = json.Marshal(map[string]any{top.name: m}); err == nil {
					a.Unknown = b
				}
			}
		}
		if err != nil {
			return deltaactions.Action{}, false, fmt.Errorf("%s: %w", top.name, err)
		}
	}
	return a, found != "", nil
}

// common reads the fields add and remove share.
func (fn *fileNodes) common(rv *rowView) (fileFields, error) {
	var f fileFields
	var err error
	var ok bool
	if f.path, ok, err = rv.strIn(fn.path, &rv.paths); err != nil {
		return f, err
	} else if !ok || f.path == "" {
		return f, errors.New("file action without path")
	}
	if f.pv, err = rv.stringMap(fn.pv); err != nil {
		return f, err
	}
	if f.pv == nil && fn.pvParsed != nil {
		v, err := rv.assemble(fn.pvParsed)
		if err != nil {
			return f, err
		}
		if pp, ok := v.(map[string]any); ok {
			f.pv = partitionStrings(pp)
		}
	}
	if f.size, f.hasSize, err = rv.int64v(fn.size); err != nil {
		return f, err
	}
	if f.stats, _, err = rv.strIn(fn.stats, &rv.stats); err != nil {
		return f, err
	}
	if f.tags, err = rv.tagMap(fn.tags); err != nil {
		return f, err
	}
	if fn.dv != nil && rv.present(fn.dv) {
		if f.dv, err = fn.readDV(rv); err != nil {
			return f, fmt.Errorf("file %s: deletionVector: %w", f.path, err)
		}
	}
	if f.baseRowID, err = rv.int64(fn.baseRowID); err != nil {
		return f, err
	}
	if f.defaultRCV, err = rv.int64(fn.defaultRCV); err != nil {
		return f, err
	}
	f.extra, err = extraFrom(rv, fn.other)
	return f, err
}

// extraFrom assembles the non-null unknown columns as JSON fields.
func extraFrom(rv *rowView, nodes []*pqNode) (deltaactions.Extra, error) {
	var extra deltaactions.Extra
	for _, n := range nodes {
		v, err := rv.assemble(n)
		if err != nil {
			return nil, err
		}
		if v == nil {
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n.name, err)
		}
		if extra == nil {
			extra = deltaactions.Extra{}
		}
		extra[n.name] = b
	}
	return extra, nil
}

func (fn *fileNodes) readDV(rv *rowView) (*deltaactions.DeletionVector, error) {
	var dv deltaactions.DeletionVector
	var err error
	var ok bool
	if dv.StorageType, ok, err = rv.str(fn.dvStorage); err != nil || !ok {
		return nil, errors.Join(err, errors.New("descriptor without storageType"))
	}
	if dv.PathOrInlineDv, _, err = rv.str(fn.dvPath); err != nil {
		return nil, err
	}
	off, hasOff, err := rv.int64v(fn.dvOffset)
	if err != nil {
		return nil, err
	}
	if hasOff {
		if err := checkDVRange("offset", off); err != nil {
			return nil, err
		}
		o := int32(off)
		dv.Offset = &o
	}
	size, hasSize, err := rv.int64v(fn.dvSize)
	if err != nil {
		return nil, err
	}
	card, hasCard, err := rv.int64v(fn.dvCard)
	if err != nil {
		return nil, err
	}
	if !hasSize || !hasCard {
		return nil, errors.New("descriptor lacks sizeInBytes or cardinality")
	}
	if err := checkDVRange("sizeInBytes", size); err != nil {
		return nil, err
	}
	dv.SizeInBytes, dv.Cardinality = int32(size), card
	if dv.Extra, err = extraFrom(rv, fn.dvOther); err != nil {
		return nil, err
	}
	return &dv, nil
}

func (fn *fileNodes) readAdd(rv *rowView) (*deltaactions.Add, error) {
	f, err := fn.common(rv)
	if err != nil {
		return nil, err
	}
	a := rv.newAdd()
	*a = deltaactions.Add{Path: f.path, PartitionValues: f.pv, Stats: f.stats, Tags: f.tags, DeletionVector: f.dv,
		BaseRowID: f.baseRowID, DefaultRowCommitVersion: f.defaultRCV, Extra: f.extra}
	a.Size = f.size
	if a.ModificationTime, _, err = rv.int64v(fn.modTime); err != nil {
		return nil, err
	}
	if a.DataChange, _, err = rv.boolv(fn.dataChange); err != nil {
		return nil, err
	}
	if cp, ok, err := rv.str(fn.clusteringProvider); err != nil {
		return nil, err
	} else if ok {
		a.ClusteringProvider = ptrTo(cp)
	}
	if a.Stats == "" && fn.statsParsed != nil {
		v, err := rv.assemble(fn.statsParsed)
		if err != nil {
			return nil, err
		}
		if sp, ok := v.(map[string]any); ok {
			a.ParsedStats = statsFromParsed(sp)
		}
	}
	if err := checkFileAction(&deltaactions.Action{Add: a}); err != nil {
		return nil, err
	}
	// Stats are checked here, while the string is in cache, rather than
	// on the snapshot's million files afterwards: a checkpoint holding
	// stats that do not parse is a corrupt checkpoint.
	if err := rv.checkStats(a); err != nil {
		return nil, err
	}
	return a, nil
}

func (fn *fileNodes) readRemove(rv *rowView) (*deltaactions.Remove, error) {
	f, err := fn.common(rv)
	if err != nil {
		return nil, err
	}
	r := &deltaactions.Remove{Path: f.path, PartitionValues: f.pv, Stats: f.stats, Tags: f.tags, DeletionVector: f.dv,
		BaseRowID: f.baseRowID, DefaultRowCommitVersion: f.defaultRCV, Extra: f.extra}
	if f.hasSize {
		size := f.size
		r.Size = &size
	}
	if r.DeletionTimestamp, err = rv.int64(fn.deletionTimestamp); err != nil {
		return nil, err
	}
	if dc, err := rv.bool(fn.dataChange); err != nil {
		return nil, err
	} else if dc != nil {
		r.DataChange = *dc
	}
	if r.ExtendedFileMetadata, err = rv.bool(fn.extendedMeta); err != nil {
		return nil, err
	}
	if err := checkFileAction(&deltaactions.Action{Remove: r}); err != nil {
		return nil, err
	}
	return r, nil
}

// actionViaJSON converts the rare non-file actions through their JSON
// decoders, which keeps unknown fields in Extra.
func actionViaJSON(kind string, m map[string]any) (deltaactions.Action, error) {
	b, err := json.Marshal(map[string]any{kind: m})
	if err != nil {
		return deltaactions.Action{}, err
	}
	return deltaactions.ParseAction(b)
}

// fileFields are the fields common to add and remove read from a row.
type fileFields struct {
	path       string
	pv         map[string]*string
	size       int64
	hasSize    bool
	stats      string
	tags       map[string]string
	dv         *deltaactions.DeletionVector
	baseRowID  *int64
	defaultRCV *int64
	extra      deltaactions.Extra
}

// partitionStrings renders typed partitionValues_parsed values in the
// string forms of the partitionValues map.
func partitionStrings(pp map[string]any) map[string]*string {
	out := make(map[string]*string, len(pp))
	for k, v := range pp {
		var s string
		switch x := v.(type) {
		case nil:
			out[k] = nil
			continue
		case string:
			s = x
		case float64:
			s = strconv.FormatFloat(x, 'g', -1, 64)
		default:
			s = fmt.Sprint(x)
		}
		out[k] = &s
	}
	return out
}

// statsFromParsed converts a checkpoint's stats_parsed struct to Stats,
// with numbers as json.Number like ParseStats. Non-finite floats are
// dropped (they have no JSON form and carry no usable bound).
func statsFromParsed(sp map[string]any) *stats.Stats {
	s := &stats.Stats{}
	if n, ok := sp["numRecords"].(int64); ok {
		s.NumRecords = &n
	}
	if tb, ok := sp["tightBounds"].(bool); ok {
		s.TightBounds = &tb
	}
	if m, ok := sp["minValues"].(map[string]any); ok {
		s.MinValues = jsonNumbers(m)
	}
	if m, ok := sp["maxValues"].(map[string]any); ok {
		s.MaxValues = jsonNumbers(m)
	}
	if m, ok := sp["nullCount"].(map[string]any); ok {
		s.NullCount = jsonNumbers(m)
	}
	return s
}

func jsonNumbers(m map[string]any) map[string]any {
	for k, v := range m {
		switch x := v.(type) {
		case int64:
			m[k] = json.Number(strconv.FormatInt(x, 10))
		case float64:
			if math.IsNaN(x) || math.IsInf(x, 0) {
				delete(m, k)
				continue
			}
			m[k] = json.Number(strconv.FormatFloat(x, 'g', -1, 64))
		case map[string]any:
			m[k] = jsonNumbers(x)
		}
	}
	return m
}
