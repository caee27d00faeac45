package scan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	deltaschema "github.com/compactord/compactord/delta/schema"
	"github.com/parquet-go/parquet-go"
)

// DataSchema returns the parquet schema of the table's data files as
// compactord writes them (see DataSchemaOf).
func DataSchema(snap *delta.Snapshot) (*parquet.Schema, error) {
	ds, err := newDataShape(snap)
	if err != nil {
		return nil, err
	}
	return ds.schema, nil
}

// DataSchemaOf builds the parquet schema of data files for a table schema
// and metadata:
//   - physical column names under column mapping name/id, and parquet
//     field_id = delta.columnMapping.id (Spark writes ids in name mode too);
//   - no partition columns and no CDF _change_type column (tables that
//     require materialized partition columns, icebergCompat or
//     materializePartitionColumns, are refused by the feature gate);
//   - void columns are absent;
//   - timestamp = INT64 TIMESTAMP(micros, UTC), timestamp_ntz = INT64
//     TIMESTAMP(micros, not adjusted), date = INT32 DATE, byte/short = INT32
//     INT(8/16), decimal as Spark writes it (INT32 for P<=9, INT64 for P<=18,
//     else FIXED_LEN_BYTE_ARRAY of the minimal width);
//   - 3-level LIST (list/element) and MAP (key_value/key/value);
//   - fields are optional or required following nullability, in schema
//     order.
//
// variant columns are refused.
func DataSchemaOf(schema *deltaschema.StructType, meta *actions.Metadata) (*parquet.Schema, error) {
	ds, err := buildDataShape(schema, meta)
	if err != nil {
		return nil, err
	}
	return ds.schema, nil
}

// dataShape is the target (write) schema of a table's data files together
// with, for every parquet column of it, the path of Delta types leading to
// it. The FileScan converts file rows into it and the logical decoder reads
// rows of it.
type dataShape struct {
	schema *parquet.Schema
	mode   string
	// fields are the data (non-partition, non-void) fields in schema order.
	fields []*deltaschema.StructField
	// root describes the top-level struct; its children follow fields.
	root *shapeNode
	// leaves are the parquet leaf columns in column order.
	leaves []*shapeNode
	// rowTracking is set when the last two leaves are the materialized row
	// id and row commit version columns (newRewriteShape).
	rowTracking bool
}

// shapeKind is the kind of a node in a dataShape.
type shapeKind int

const (
	shapeLeaf shapeKind = iota
	shapeStruct
	shapeList
	shapeMap
)

// shapeNode is one node of the target schema. For lists and maps, children
// are [element] and [key, value].
type shapeNode struct {
	kind  shapeKind
	dt    *deltaschema.DataType
	field *deltaschema.StructField // nil for list elements, map keys and values, the root
	name  string                   // physical parquet name of the node
	// optional reports whether the node's value may be null (its parquet
	// node is optional).
	optional bool
	// def is the definition level at which this node is non-null; rep is
	// the repetition level of the node (for lists and maps: of their
	// entries, i.e. the repeated child).
	def, rep int
	children []*shapeNode
	// col is the column index of a leaf; firstCol/endCol the column range of
	// the subtree.
	col, firstCol, endCol int
	// path is the physical path of the node ("a.list.element"), for errors.
	path string
}

// RewriteSchema returns the parquet schema of the files compactord
// rewrites: the data schema (DataSchema) and, when the snapshot's row
// tracking is enabled, the materialized row id and row commit version
// columns after it (optional INT64, named by the table's
// delta.rowTracking.materialized*ColumnName properties, without field ids:
// they are not in the table schema).
func RewriteSchema(snap *delta.Snapshot) (*parquet.Schema, error) {
	ds, err := newRewriteShape(snap)
	if err != nil {
		return nil, err
	}
	return ds.schema, nil
}

// newRewriteShape is newDataShape plus the materialized row tracking
// columns when row tracking is enabled (ds.rowTracking says so).
func newRewriteShape(snap *delta.Snapshot) (*dataShape, error) {
	rt, err := delta.RowTrackingOf(snap)
	if err != nil {
		return nil, err
	}
	if !rt.Materialize() {
		return newDataShape(snap)
	}
	base, err := newDataShape(snap)
	if err != nil {
		return nil, err
	}
	long := func(name string) *deltaschema.StructField {
		return &deltaschema.StructField{Name: name, Type: &deltaschema.DataType{Name: "long"}, Nullable: true}
	}
	fields := append(slices.Clip(base.fields), long(rt.RowIDColumn), long(rt.RowCommitVersionColumn))
	ds, err := buildShape(fields, base.mode, true)
	if err != nil {
		return nil, fmt.Errorf("rewrite schema of version %d: %w", snap.Version, err)
	}
	ds.rowTracking = true
	return ds, nil
}

func newDataShape(snap *delta.Snapshot) (*dataShape, error) {
	if snap == nil {
		return nil, fmt.Errorf("data schema: nil snapshot")
	}
	schema := snap.Schema
	if schema == nil {
		s, err := deltaschema.ParseSchema(snap.Metadata.SchemaString)
		if err != nil {
			return nil, fmt.Errorf("data schema of version %d: %w", snap.Version, err)
		}
		schema = s
	}
	ds, err := buildDataShape(schema, &snap.Metadata)
	if err != nil {
		return nil, fmt.Errorf("data schema of version %d: %w", snap.Version, err)
	}
	return ds, nil
}

func buildDataShape(schema *deltaschema.StructType, meta *actions.Metadata) (*dataShape, error) {
	mode, err := actions.ColumnMappingMode(meta)
	if err != nil {
		return nil, err
	}
	part := map[string]bool{}
	if meta != nil {
		for _, c := range meta.PartitionColumns {
			part[strings.ToLower(c)] = true
		}
	}
	var fields []*deltaschema.StructField
	for _, f := range schema.Fields {
		if part[strings.ToLower(f.Name)] {
			continue
		}
		fields = append(fields, f)
	}
	return buildShape(fields, mode, true)
}

// buildShape builds the shape of a struct of top-level fields. physical
// selects physical names and field ids (per mode); false yields logical
// names without ids (used to read expected/ files in tests).
func buildShape(fields []*deltaschema.StructField, mode string, physical bool) (*dataShape, error) {
	b := &shapeBuilder{mode: mode, physical: physical}
	root := &shapeNode{kind: shapeStruct, dt: &deltaschema.DataType{Struct: &deltaschema.StructType{Fields: fields}}}
	var kept []*deltaschema.StructField
	var nodes []parquet.Field
	seen := map[string]bool{}
	for _, f := range fields {
		if isVoid(f.Type) {
			continue
		}
		child, pn, err := b.field(f, 0, 0, "")
		if err != nil {
			return nil, err
		}
		if seen[child.name] {
			return nil, fmt.Errorf("duplicate physical column name %q", child.name)
		}
		seen[child.name] = true
		kept = append(kept, f)
		root.children = append(root.children, child)
		nodes = append(nodes, delta.NamedField(child.name, pn))
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("table has no data columns")
	}
	root.dt = &deltaschema.DataType{Struct: &deltaschema.StructType{Fields: kept}}
	root.endCol = b.col
	sch := parquet.NewSchema("spark_schema", delta.NewOrderedGroup(nodes))
	ds := &dataShape{schema: sch, mode: mode, fields: kept, root: root, leaves: b.leaves}
	if got := len(sch.Columns()); got != len(b.leaves) {
		return nil, fmt.Errorf("internal error: parquet schema has %d columns, shape has %d", got, len(b.leaves))
	}
	return ds, nil
}

// isVoid reports whether a type is void (no parquet column). A struct whose
// fields are all void would be an empty group, which parquet cannot hold; it
// is treated as void too.
func isVoid(t *deltaschema.DataType) bool {
	if t.Name == "void" {
		return true
	}
	if t.Struct != nil {
		for _, f := range t.Struct.Fields {
			if !isVoid(f.Type) {
				return false
			}
		}
		return true
	}
	return false
}

type shapeBuilder struct {
	mode     string
	physical bool
	col      int
	leaves   []*shapeNode
}

func (b *shapeBuilder) field(f *deltaschema.StructField, def, rep int, parent string) (*shapeNode, parquet.Node, error) {
	name := f.Name
	if b.physical {
		name = deltaschema.PhysName(f, b.mode)
	}
	n, pn, err := b.node(f.Type, name, f.Nullable, def, rep, joinPath(parent, name))
	if err != nil {
		return nil, nil, err
	}
	n.field = f
	if b.physical && b.mode != deltaschema.ColumnMappingNone {
		if id, ok := deltaschema.FieldID(f); ok {
			pn = withID(pn, id)
		}
	}
	return n, pn, nil
}

func joinPath(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

// withID puts a field id under the repetition wrapper so that optional and
// required nodes keep reporting it.
func withID(n parquet.Node, id int) parquet.Node {
	switch {
	case n.Optional():
		return parquet.Optional(parquet.FieldID(unwrapRepetition(n), id))
	case n.Repeated():
		return parquet.Repeated(parquet.FieldID(unwrapRepetition(n), id))
	default:
		return parquet.Required(parquet.FieldID(unwrapRepetition(n), id))
	}
}

// repetitionWrapped remembers the inner node of optional/required wrappers
// created by wrap, so that ids can be inserted below them.
type repetitionWrapped struct {
	parquet.Node
	inner parquet.Node
}

func unwrapRepetition(n parquet.Node) parquet.Node {
	if w, ok := n.(*repetitionWrapped); ok {
		return w.inner
	}
	return n
}

// withRepetition marks n optional when optional is set, required otherwise.
func withRepetition(n parquet.Node, optional bool) parquet.Node {
	if optional {
		return &repetitionWrapped{Node: parquet.Optional(n), inner: n}
	}
	return &repetitionWrapped{Node: parquet.Required(n), inner: n}
}

func (b *shapeBuilder) node(t *deltaschema.DataType, name string, nullable bool, def, rep int, path string) (*shapeNode, parquet.Node, error) {
	if nullable {
		def++
	}
	n := &shapeNode{dt: t, name: name, optional: nullable, def: def, rep: rep, firstCol: b.col, path: path}
	switch {
	case t.Struct != nil:
		n.kind = shapeStruct
		var fields []parquet.Field
		for _, f := range t.Struct.Fields {
			if isVoid(f.Type) {
				continue
			}
			c, pn, err := b.field(f, def, rep, path)
			if err != nil {
				return nil, nil, err
			}
			n.children = append(n.children, c)
			fields = append(fields, delta.NamedField(c.name, pn))
		}
		if len(fields) == 0 {
			return nil, nil, fmt.Errorf("column %s: struct without non-void fields", path)
		}
		n.endCol = b.col
		return n, withRepetition(delta.NewOrderedGroup(fields), nullable), nil
	case t.ElementType != nil:
		n.kind = shapeList
		n.rep = rep + 1
		if isVoid(t.ElementType) {
			return nil, nil, fmt.Errorf("column %s: array of void is not supported", path)
		}
		el, pel, err := b.node(t.ElementType, "element", t.ContainsNull, def+1, rep+1, path+".list.element")
		if err != nil {
			return nil, nil, err
		}
		n.children = []*shapeNode{el}
		n.endCol = b.col
		return n, withRepetition(parquet.List(pel), nullable), nil
	case t.KeyType != nil:
		n.kind = shapeMap
		n.rep = rep + 1
		if isVoid(t.KeyType) || isVoid(t.ValueType) {
			return nil, nil, fmt.Errorf("column %s: map of void is not supported", path)
		}
		k, pk, err := b.node(t.KeyType, "key", false, def+1, rep+1, path+".key_value.key")
		if err != nil {
			return nil, nil, err
		}
		v, pv, err := b.node(t.ValueType, "value", t.ValueContainsNull, def+1, rep+1, path+".key_value.value")
		if err != nil {
			return nil, nil, err
		}
		n.children = []*shapeNode{k, v}
		n.endCol = b.col
		// parquet.Map wraps the key in Required itself.
		return n, withRepetition(parquet.Map(unwrapRepetition(pk), pv), nullable), nil
	}
	leaf, err := delta.LeafNode(t)
	if err != nil {
		return nil, nil, fmt.Errorf("column %s: %w", path, err)
	}
	n.kind = shapeLeaf
	n.col = b.col
	b.col++
	n.endCol = b.col
	b.leaves = append(b.leaves, n)
	return n, withRepetition(leaf, nullable), nil
}
