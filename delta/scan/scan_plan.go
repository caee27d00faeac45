package scan

import (
	"fmt"
	"strings"

	"github.com/compactord/compactord/delta/schema"
	"github.com/parquet-go/parquet-go"
)

// A file's rows are converted into the target data schema column by column.
// For every target leaf the planner walks the target shape and the file's
// parquet schema together, step by step (struct field, list container, list
// entries, element, ...), and records for each step how much it adds to the
// definition and repetition levels on each side. Definition and repetition
// levels of file values are then translated with two small tables. A target
// leaf that is absent from the file is filled with nulls whose levels follow
// the deepest ancestor the file does have (a "proxy" column), so a column
// added to a struct after the file was written reads as null exactly where
// the struct is present.

// levelStep is one step along the path to a leaf.
type levelStep struct {
	tgtDef, tgtRep int // 0 or 1
	srcDef, srcRep int // 0 or 1
	srcExists      bool
	path           string // target path of the step, for errors
}

// leafPlan converts the values of one target leaf.
type leafPlan struct {
	tgt *shapeNode
	// srcCol is the file column whose levels (and, when present, values)
	// feed this leaf; -1 when the whole top-level column is absent.
	srcCol int
	// present is true when the file has this leaf itself (not a proxy).
	present   bool
	srcMaxDef int
	// defMap maps a file definition level to the target one (-1: a null
	// where the table schema says required).
	defMap []int
	// repMap maps a file repetition level to the target one (-1: skip, the
	// proxy repeats deeper than this leaf).
	repMap    []int
	tgtMaxDef int
	conv      valueConv
	// sameType is set when the file value needs no conversion (byte
	// arrays are still copied).
	sameType bool
	// direct is set when values are copied unchanged (same type, levels
	// and column index).
	direct bool
	// nullStepPath names the required step a -1 defMap entry violates.
	nullStepPath []string
}

type scanPlanner struct {
	mode    string
	byID    bool
	src     *parquet.Schema
	file    string
	plans   []*leafPlan
	srcCols map[string]parquet.LeafColumn
}

// planScan builds the conversion plan of a file schema into a data shape.
// byID resolves top-level and nested struct fields by parquet field id
// (column mapping id mode), otherwise fields resolve by name.
func planScan(ds *dataShape, src *parquet.Schema, file string) ([]*leafPlan, error) {
	p := &scanPlanner{mode: ds.mode, byID: ds.mode == schema.ColumnMappingID, src: src, file: file}
	for _, c := range ds.root.children {
		child := findSrcField(src.Fields(), c, p.byID)
		var inc int
		if child != nil {
			inc = nodeDefInc(child)
		}
		if err := p.walk(c, child, nil, inc, nil); err != nil {
			return nil, err
		}
	}
	return p.plans, nil
}

func nodeDefInc(n parquet.Node) int {
	if n.Optional() || n.Repeated() {
		return 1
	}
	return 0
}

func fieldID(n parquet.Node) int { return n.ID() }

// findSrcField finds the file field matching a target field: by field id in
// id mode (when the target has one), else by exact physical name, else
// case-insensitively (Spark resolves parquet columns case-insensitively).
func findSrcField(fields []parquet.Field, tn *shapeNode, byID bool) parquet.Field {
	if byID && tn.field != nil {
		if id, ok := schema.FieldID(tn.field); ok {
			for _, f := range fields {
				if fieldID(f) == id {
					return f
				}
			}
			return nil
		}
	}
	for _, f := range fields {
		if f.Name() == tn.name {
			return f
		}
	}
	var found parquet.Field
	for _, f := range fields {
		if strings.EqualFold(f.Name(), tn.name) {
			if found != nil {
				return nil // ambiguous: treat as absent rather than guess
			}
			found = f
		}
	}
	return found
}

// walk descends the target node tn and the file node src (nil when absent).
// srcDefInc is what src adds to the definition level at this step (0 for a
// 2-level list element, which shares its node with the repeated step).
func (p *scanPlanner) walk(tn *shapeNode, src parquet.Node, srcPath []string, srcDefInc int, steps []levelStep) error {
	tgtInc := 0
	if tn.optional {
		tgtInc = 1
	}
	var name string
	if f, ok := src.(parquet.Field); ok {
		name = f.Name()
	}
	if src != nil && name != "" {
		srcPath = appendPath(srcPath, name)
	}
	// A repeated node whose repetition no parent step has consumed is an
	// unannotated list (srcDefInc is 0 for 2-level list elements, whose
	// repetition is the list's).
	legacyRepeated := src != nil && src.Repeated() && srcDefInc == 1
	if legacyRepeated && tn.kind != shapeList {
		return fmt.Errorf("data file %s: column %s is repeated in the file but a %s in the table", p.file, tn.path, tn.dt.String())
	}
	if legacyRepeated {
		// An unannotated repeated field is a list whose container is
		// implicit: the container step adds nothing on the file side.
		srcDefInc = 0
	}
	steps = appendStep(steps, levelStep{tgtDef: tgtInc, srcDef: srcDefInc, srcExists: src != nil, path: tn.path})
	switch tn.kind {
	case shapeLeaf:
		if src != nil && !src.Leaf() {
			return fmt.Errorf("data file %s: column %s is a group in the file but a %s in the table", p.file, tn.path, tn.dt.String())
		}
		return p.finishLeaf(tn, src, srcPath, steps)
	case shapeStruct:
		if src != nil && src.Leaf() {
			return fmt.Errorf("data file %s: column %s is a primitive in the file but a struct in the table", p.file, tn.path)
		}
		for _, c := range tn.children {
			var child parquet.Field
			inc := 0
			if src != nil {
				child = findSrcField(src.Fields(), c, p.byID)
				if child != nil {
					inc = nodeDefInc(child)
				}
			}
			if err := p.walk(c, child, srcPath, inc, steps); err != nil {
				return err
			}
		}
		return nil
	case shapeList:
		var rep, elem parquet.Node
		var repPath, elemPath []string
		elemInc := 0
		if src != nil {
			if legacyRepeated {
				rep, repPath = src, srcPath
			} else {
				if src.Leaf() || len(src.Fields()) != 1 || !src.Fields()[0].Repeated() {
					return fmt.Errorf("data file %s: column %s is not a list in the file", p.file, tn.path)
				}
				r := src.Fields()[0]
				rep, repPath = r, appendPath(srcPath, r.Name())
			}
			rf, _ := rep.(parquet.Field)
			isElem := rep.Leaf() || len(rep.Fields()) > 1 || legacyRepeated ||
				(rf != nil && (rf.Name() == "array" || rf.Name() == name+"_tuple"))
			if isElem {
				// 2-level list: the repeated node is the element.
				elem, elemPath = rep, repPath
			} else {
				e := rep.Fields()[0]
				elem, elemPath = e, appendPath(repPath, e.Name())
				elemInc = nodeDefInc(e)
			}
		}
		steps = appendStep(steps, levelStep{tgtDef: 1, tgtRep: 1, srcDef: 1, srcRep: 1, srcExists: src != nil, path: tn.path})
		return p.walkPositional(tn.children[0], elem, elemPath, elemInc, steps)
	case shapeMap:
		var key, val parquet.Node
		var keyPath, valPath []string
		keyInc, valInc := 0, 0
		if src != nil {
			if src.Leaf() || len(src.Fields()) != 1 || !src.Fields()[0].Repeated() || src.Fields()[0].Leaf() {
				return fmt.Errorf("data file %s: column %s is not a map in the file", p.file, tn.path)
			}
			kv := src.Fields()[0]
			kvPath := appendPath(srcPath, kv.Name())
			fs := kv.Fields()
			var kf, vf parquet.Field
			for _, f := range fs {
				switch f.Name() {
				case "key":
					kf = f
				case "value":
					vf = f
				}
			}
			if kf == nil && len(fs) >= 1 {
				kf = fs[0]
			}
			if vf == nil && len(fs) == 2 {
				vf = fs[1]
			}
			if kf == nil {
				return fmt.Errorf("data file %s: map column %s has no key", p.file, tn.path)
			}
			key, keyPath, keyInc = kf, appendPath(kvPath, kf.Name()), nodeDefInc(kf)
			if vf != nil {
				val, valPath, valInc = vf, appendPath(kvPath, vf.Name()), nodeDefInc(vf)
			}
		}
		steps = appendStep(steps, levelStep{tgtDef: 1, tgtRep: 1, srcDef: 1, srcRep: 1, srcExists: src != nil, path: tn.path})
		if err := p.walkPositional(tn.children[0], key, keyPath, keyInc, steps); err != nil {
			return err
		}
		return p.walkPositional(tn.children[1], val, valPath, valInc, steps)
	}
	return fmt.Errorf("internal error: unknown shape kind at %s", tn.path)
}

// walkPositional walks a list element or map key/value: its file node was
// found by position, and its file path is already complete.
func (p *scanPlanner) walkPositional(tn *shapeNode, src parquet.Node, srcPath []string, inc int, steps []levelStep) error {
	if src != nil {
		// Strip the Field wrapper so that walk does not append the name again.
		return p.walk(tn, positional{Node: src}, srcPath, inc, steps)
	}
	return p.walk(tn, nil, srcPath, 0, steps)
}

// positional hides a node's Field-ness (its name is already in the path).
type positional struct{ parquet.Node }

func appendPath(p []string, name string) []string {
	out := make([]string, len(p), len(p)+1)
	copy(out, p)
	return append(out, name)
}

func appendStep(s []levelStep, st levelStep) []levelStep {
	out := make([]levelStep, len(s), len(s)+1)
	copy(out, s)
	return append(out, st)
}

func (p *scanPlanner) lookup(path []string) (parquet.LeafColumn, error) {
	lc, ok := p.src.Lookup(path...)
	if !ok {
		return lc, fmt.Errorf("data file %s: internal error: column %s not found", p.file, strings.Join(path, "."))
	}
	return lc, nil
}

func (p *scanPlanner) finishLeaf(tn *shapeNode, src parquet.Node, srcPath []string, steps []levelStep) error {
	n := len(steps)
	k := 0
	for k < n && steps[k].srcExists {
		k++
	}
	lp := &leafPlan{tgt: tn, srcCol: -1, present: k == n, tgtMaxDef: tn.def}
	switch {
	case k == 0:
		if steps[0].tgtDef == 0 {
			return fmt.Errorf("data file %s: required column %s is missing", p.file, tn.path)
		}
		p.plans = append(p.plans, lp)
		return nil
	case k < n:
		if steps[k].tgtDef == 0 {
			return fmt.Errorf("data file %s: required column %s is missing", p.file, steps[k].path)
		}
		// Proxy: the first leaf under the deepest node the file has.
		// Find it by re-walking srcPath: srcPath holds the path of that
		// deepest node (walk stops appending once src is nil).
		node := nodeAt(p.src, srcPath)
		if node == nil {
			return fmt.Errorf("data file %s: internal error: no node at %s", p.file, strings.Join(srcPath, "."))
		}
		path := srcPath
		for !node.Leaf() {
			f := node.Fields()[0]
			path = appendPath(path, f.Name())
			node = f
		}
		srcPath = path
	}
	lc, err := p.lookup(srcPath)
	if err != nil {
		return err
	}
	lp.srcCol = lc.ColumnIndex
	lp.srcMaxDef = lc.MaxDefinitionLevel
	lp.defMap = make([]int, lc.MaxDefinitionLevel+1)
	lp.nullStepPath = make([]string, lc.MaxDefinitionLevel+1)
	for d := range lp.defMap {
		defined, cum := 0, 0
		for j := 0; j < k; j++ {
			cum += steps[j].srcDef
			if cum > d {
				break
			}
			defined++
		}
		tgt := 0
		for j := 0; j < defined; j++ {
			tgt += steps[j].tgtDef
		}
		lp.defMap[d] = tgt
		if defined < n && steps[defined].tgtDef == 0 {
			// A null in the file (or a column absent from it) where the
			// table says required: the target cannot represent it.
			lp.defMap[d] = -1
			lp.nullStepPath[d] = steps[defined].path
		}
	}
	lp.repMap = make([]int, lc.MaxRepetitionLevel+1)
	for r := 1; r < len(lp.repMap); r++ {
		lp.repMap[r] = -1
		cumS, cumT := 0, 0
		for j := 0; j < k; j++ {
			cumS += steps[j].srcRep
			cumT += steps[j].tgtRep
			if steps[j].srcRep == 1 && cumS == r {
				lp.repMap[r] = cumT
				break
			}
		}
	}
	if lp.present {
		conv, err := newValueConv(lc.Node, tn.dt)
		if err != nil {
			return fmt.Errorf("data file %s: column %s: %w", p.file, tn.path, err)
		}
		lp.conv = conv
		lp.sameType = sameLeafType(lc.Node, tn.dt)
		lp.direct = lp.sameType && lp.srcCol == tn.col && identityLevels(lp)
	}
	p.plans = append(p.plans, lp)
	return nil
}

func nodeAt(s *parquet.Schema, path []string) parquet.Node {
	var n parquet.Node = s
	for _, name := range path {
		var next parquet.Node
		for _, f := range n.Fields() {
			if f.Name() == name {
				next = f
				break
			}
		}
		if next == nil {
			return nil
		}
		n = next
	}
	return n
}

// isIdentityPlan reports whether a file with srcCols columns converts to the
// data schema without any change: every target leaf is the file column of
// the same index, with the same levels and type.
func isIdentityPlan(plans []*leafPlan, srcCols int) bool {
	if len(plans) != srcCols {
		return false
	}
	for i, lp := range plans {
		if !lp.direct || lp.srcCol != i {
			return false
		}
	}
	return true
}

func identityLevels(lp *leafPlan) bool {
	for d, td := range lp.defMap {
		if td != d {
			return false
		}
	}
	for r, tr := range lp.repMap {
		if tr != r {
			return false
		}
	}
	return true
}
