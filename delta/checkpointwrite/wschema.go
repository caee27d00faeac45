package checkpointwrite

import (
	"fmt"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	deltaprops "github.com/compactord/compactord/delta/props"
	"github.com/compactord/compactord/delta/schema"
	"github.com/compactord/compactord/delta/statscollect"
	"github.com/parquet-go/parquet-go"
)

// The schema compactord writes checkpoints with is Spark's (Checkpoints.
// buildCheckpoint at delta-io/delta bb1057f): every column optional except
// map keys, actions in SingleAction order without commitInfo, cdc and
// (outside V2 parquet checkpoints) checkpointMetadata and sidecar; remove
// without stats and tags; add with Spark's reordered columns followed by
// stats, partitionValues_parsed and stats_parsed as the table properties
// say. Typed values use Spark's parquet mapping: timestamps INT96 (Spark's
// default spark.sql.parquet.outputTimestampType), timestamp_ntz INT64
// micros, decimals INT32/INT64/FIXED by precision.

// wkind is the shape of a node of the checkpoint write schema.
type wkind uint8

const (
	wLeaf wkind = iota
	wStruct
	wMap  // MAP<string, string>: children key, value
	wList // LIST<string>: child element
)

// wspec describes one (optional) node of the write schema before levels
// and column indexes are assigned.
type wspec struct {
	name   string
	kind   wkind
	leaf   parquet.Node     // wLeaf: the unwrapped type node
	dt     *schema.DataType // typed leaves (stats_parsed, partitionValues_parsed)
	fields []wspec          // wStruct
}

func leafSpec(name string, n parquet.Node) wspec { return wspec{name: name, kind: wLeaf, leaf: n} }
func strSpec(name string) wspec                  { return leafSpec(name, parquet.String()) }
func i64Spec(name string) wspec                  { return leafSpec(name, parquet.Int(64)) }
func i32Spec(name string) wspec                  { return leafSpec(name, parquet.Int(32)) }
func boolSpec(name string) wspec                 { return leafSpec(name, parquet.Leaf(parquet.BooleanType)) }
func mapSpec(name string) wspec                  { return wspec{name: name, kind: wMap} }
func listSpec(name string) wspec                 { return wspec{name: name, kind: wList} }
func structSpec(name string, f ...wspec) wspec   { return wspec{name: name, kind: wStruct, fields: f} }

// wnode is a compiled node: its definition level when non-null, its
// repetition level (map/list entries), leaf column index and the range of
// leaf columns below it.
type wnode struct {
	name     string
	kind     wkind
	def      int
	rep      int
	col      int
	first    int
	end      int
	dt       *schema.DataType
	children []*wnode
	byName   map[string]*wnode
}

// child returns the struct child named name (nil if absent).
func (n *wnode) child(name string) *wnode {
	if n == nil {
		return nil
	}
	return n.byName[name]
}

type wcompiler struct{ col int }

func (c *wcompiler) compile(s wspec, parentDef, rep int) (*wnode, parquet.Node) {
	n := &wnode{name: s.name, kind: s.kind, def: parentDef + 1, rep: rep, first: c.col, dt: s.dt}
	var pn parquet.Node
	switch s.kind {
	case wLeaf:
		n.col = c.col
		c.col++
		pn = s.leaf
	case wStruct:
		n.byName = make(map[string]*wnode, len(s.fields))
		fields := make([]parquet.Field, 0, len(s.fields))
		for _, f := range s.fields {
			cn, cpn := c.compile(f, n.def, rep)
			n.children = append(n.children, cn)
			n.byName[f.name] = cn
			fields = append(fields, delta.NamedField(f.name, cpn))
		}
		pn = delta.NewOrderedGroup(fields)
	case wMap:
		// key_value is repeated (+1 def, +1 rep); key required; value optional.
		n.rep = rep + 1
		key := &wnode{name: "key", kind: wLeaf, def: n.def + 1, rep: rep + 1, col: c.col, first: c.col}
		c.col++
		key.end = c.col
		val := &wnode{name: "value", kind: wLeaf, def: n.def + 2, rep: rep + 1, col: c.col, first: c.col}
		c.col++
		val.end = c.col
		n.children = []*wnode{key, val}
		pn = parquet.Map(parquet.String(), parquet.Optional(parquet.String()))
	case wList:
		n.rep = rep + 1
		el := &wnode{name: "element", kind: wLeaf, def: n.def + 2, rep: rep + 1, col: c.col, first: c.col}
		c.col++
		el.end = c.col
		n.children = []*wnode{el}
		pn = parquet.List(parquet.Optional(parquet.String()))
	}
	n.end = c.col
	return n, parquet.Optional(pn)
}

// cpLayout says which columns a checkpoint file has.
type cpLayout int

const (
	layoutClassic cpLayout = iota // V1 classic: txn, add, remove, metaData, protocol, domainMetadata
	layoutV2Top                   // V2 parquet top level: classic + checkpointMetadata, sidecar
	layoutSidecar                 // V2 sidecar: add, remove
)

// cpSchema is a compiled checkpoint write schema.
type cpSchema struct {
	schema *parquet.Schema
	ncols  int
	// tops are the top-level action columns in file order.
	tops                                                      []*wnode
	add, remove, meta, protocol, txn, domain, cpMeta, sidecar *wnode
	// statsParsed and pvParsed are nil when not written.
	statsParsed, pvParsed *wnode
}

// cpColumns are the per-table choices of the add columns.
type cpColumns struct {
	statsJSON   bool
	statsParsed *wspec // nil: no stats_parsed column
	pvParsed    *wspec // nil: no partitionValues_parsed column
}

func dvSpec() wspec {
	return structSpec("deletionVector",
		strSpec("storageType"), strSpec("pathOrInlineDv"), i32Spec("offset"),
		i32Spec("sizeInBytes"), i64Spec("cardinality"), i64Spec("maxRowIndex"))
}

func addSpec(cols cpColumns) wspec {
	f := []wspec{
		strSpec("path"), mapSpec("partitionValues"), i64Spec("size"), i64Spec("modificationTime"),
		boolSpec("dataChange"), mapSpec("tags"), dvSpec(), i64Spec("baseRowId"),
		i64Spec("defaultRowCommitVersion"), strSpec("clusteringProvider"),
	}
	if cols.statsJSON {
		f = append(f, strSpec("stats"))
	}
	if cols.pvParsed != nil {
		f = append(f, *cols.pvParsed)
	}
	if cols.statsParsed != nil {
		f = append(f, *cols.statsParsed)
	}
	return structSpec("add", f...)
}

func removeSpec() wspec {
	return structSpec("remove",
		strSpec("path"), i64Spec("deletionTimestamp"), boolSpec("dataChange"), boolSpec("extendedFileMetadata"),
		mapSpec("partitionValues"), i64Spec("size"), dvSpec(), i64Spec("baseRowId"), i64Spec("defaultRowCommitVersion"))
}

func newCPSchema(layout cpLayout, cols cpColumns) *cpSchema {
	var specs []wspec
	txn := structSpec("txn", strSpec("appId"), i64Spec("version"), i64Spec("lastUpdated"))
	meta := structSpec("metaData",
		strSpec("id"), strSpec("name"), strSpec("description"),
		structSpec("format", strSpec("provider"), mapSpec("options")),
		strSpec("schemaString"), listSpec("partitionColumns"), mapSpec("configuration"), i64Spec("createdTime"))
	proto := structSpec("protocol", i32Spec("minReaderVersion"), i32Spec("minWriterVersion"), listSpec("readerFeatures"), listSpec("writerFeatures"))
	domain := structSpec("domainMetadata", strSpec("domain"), strSpec("configuration"), boolSpec("removed"))
	switch layout {
	case layoutSidecar:
		specs = []wspec{addSpec(cols), removeSpec()}
	default:
		specs = []wspec{txn, addSpec(cols), removeSpec(), meta, proto, domain}
		if layout == layoutV2Top {
			specs = append(specs,
				structSpec("checkpointMetadata", i64Spec("version"), mapSpec("tags")),
				structSpec("sidecar", strSpec("path"), i64Spec("sizeInBytes"), i64Spec("modificationTime"), mapSpec("tags")))
		}
	}
	var c wcompiler
	s := &cpSchema{}
	// The node of each action's top-level column, by the action's name.
	tops := map[string]**wnode{
		actions.KindAdd: &s.add, actions.KindRemove: &s.remove,
		actions.KindMetadata: &s.meta, actions.KindProtocol: &s.protocol,
		actions.KindTxn: &s.txn, actions.KindDomainMetadata: &s.domain,
		actions.KindCheckpointMetadata: &s.cpMeta, actions.KindSidecar: &s.sidecar,
	}
	fields := make([]parquet.Field, 0, len(specs))
	for _, sp := range specs {
		n, pn := c.compile(sp, 0, 0)
		s.tops = append(s.tops, n)
		fields = append(fields, delta.NamedField(sp.name, pn))
		if top, ok := tops[sp.name]; ok {
			*top = n
		}
	}
	s.ncols = c.col
	s.schema = parquet.NewSchema("spark_schema", delta.NewOrderedGroup(fields))
	s.statsParsed = s.add.child("stats_parsed")
	s.pvParsed = s.add.child("partitionValues_parsed")
	return s
}

// checkpointColumns decides the add columns of a table's checkpoints from
// its properties, schema and protocol.
func checkpointColumns(snap *delta.Snapshot, props *deltaprops.Properties) (cpColumns, error) {
	cols := cpColumns{statsJSON: props.CheckpointWriteStatsAsJSON}
	if !props.CheckpointWriteStatsAsStruct {
		return cols, nil
	}
	mode, part, err := partitionColumns(snap)
	if err != nil {
		return cols, err
	}
	if len(part) > 0 {
		pv := wspec{name: "partitionValues_parsed", kind: wStruct}
		for _, f := range part {
			leaf, err := checkpointLeaf(f.Type)
			if err != nil {
				return cols, fmt.Errorf("partition column %q: %w", f.Name, err)
			}
			pv.fields = append(pv.fields, wspec{name: schema.PhysName(f, mode), kind: wLeaf, leaf: leaf, dt: f.Type})
		}
		cols.pvParsed = &pv
	}
	fields, err := statscollect.StatsFields(&snap.Metadata, snap.Schema)
	if err != nil {
		return cols, err
	}
	st := wspec{name: "stats_parsed", kind: wStruct, fields: []wspec{i64Spec("numRecords")}}
	if mm := minMaxSpecs(fields, mode); len(mm) > 0 {
		st.fields = append(st.fields, wspec{name: "minValues", kind: wStruct, fields: mm},
			wspec{name: "maxValues", kind: wStruct, fields: mm})
	}
	if nc := nullCountSpecs(fields, mode); len(nc) > 0 {
		st.fields = append(st.fields, wspec{name: "nullCount", kind: wStruct, fields: nc})
	}
	if snap.Protocol.HasFeature("deletionVectors") {
		st.fields = append(st.fields, boolSpec("tightBounds"))
	}
	cols.statsParsed = &st
	return cols, nil
}

// partitionColumns is the table's column mapping mode and the schema
// fields of its partition columns (in partitionColumns order).
func partitionColumns(snap *delta.Snapshot) (string, []*schema.StructField, error) {
	mode, err := actions.ColumnMappingMode(&snap.Metadata)
	if err != nil {
		return "", nil, err
	}
	fields, err := actions.PartitionFields(&snap.Metadata, snap.Schema)
	return mode, fields, err
}

// minMaxSpecs mirrors Spark's getMinMaxStatsSchema: skipping-eligible
// primitive columns (numbers, date, timestamps, string) and structs that
// contain one, by physical name.
func minMaxSpecs(fields []*schema.StructField, mode string) []wspec {
	return statsSpecs(fields, mode, func(name string, t *schema.DataType) (wspec, bool) {
		if statscollect.CategoryOf(t) == statscollect.CatNone {
			return wspec{}, false
		}
		leaf, err := checkpointLeaf(t)
		if err != nil {
			return wspec{}, false
		}
		return wspec{name: name, kind: wLeaf, leaf: leaf, dt: t}, true
	})
}

// nullCountSpecs mirrors Spark's getNullCountSchema: every column, structs
// as structs, everything else (arrays, maps, binary, void...) a long.
func nullCountSpecs(fields []*schema.StructField, mode string) []wspec {
	long := &schema.DataType{Name: "long"}
	return statsSpecs(fields, mode, func(name string, _ *schema.DataType) (wspec, bool) {
		return wspec{name: name, kind: wLeaf, leaf: parquet.Int(64), dt: long}, true
	})
}

// statsSpecs is the shape of a typed stats struct over fields: a struct
// column as a struct of its fields' specs (left out when none has one),
// any other column as leaf says (false: the column has no spec), by
// physical name.
func statsSpecs(fields []*schema.StructField, mode string, leaf func(name string, t *schema.DataType) (wspec, bool)) []wspec {
	var out []wspec
	for _, f := range fields {
		name := schema.PhysName(f, mode)
		if f.Type.Struct != nil {
			if sub := statsSpecs(f.Type.Struct.Fields, mode, leaf); len(sub) > 0 {
				out = append(out, wspec{name: name, kind: wStruct, fields: sub})
			}
			continue
		}
		if sp, ok := leaf(name, f.Type); ok {
			out = append(out, sp)
		}
	}
	return out
}

// checkpointLeaf is the parquet type Spark gives a typed checkpoint value.
func checkpointLeaf(t *schema.DataType) (parquet.Node, error) {
	if t.Name == "timestamp" {
		return parquet.Leaf(parquet.Int96Type), nil
	}
	return delta.LeafNode(t)
}
