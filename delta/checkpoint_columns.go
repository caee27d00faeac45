package delta

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/pq"
	"github.com/parquet-go/parquet-go"
)

// Column-wise checkpoint reading: a chunk of rows that holds only add and
// remove actions (nearly every chunk of a large checkpoint) is read from
// the leaf columns of add and remove alone, page by page, instead of
// assembling every column of every row (metaData, protocol, txn... are null
// in all but a few rows). One column per other action tells whether a row
// holds one; such a row is read alone by the row reader (readRowRange), a
// chunk of many of them row by row, as is a chunk the column reader fails
// on, so that errors are the row reader's.

// columnPlan is what readColumnRange reads of a checkpoint file.
type columnPlan struct {
	cols     []int     // leaf columns, sorted
	repeated []bool    // per entry of cols: the column is repeated
	others   []*pqNode // actions other than add, remove and commitInfo
	// maxOthers bounds the rows of other actions a chunk reads one by one
	// (each is a seek of every column); a chunk of more is read row by row.
	maxOthers int
}

// maxOtherRows is a columnPlan's maxOthers.
const maxOtherRows = 16

// planColumns returns the leaf columns readColumnRange reads: every leaf
// below add and remove, and the first leaf of each other action.
func (cs *checkpointSchema) planColumns(schema *parquet.Schema) *columnPlan {
	var cols []int
	plan := &columnPlan{maxOthers: maxOtherRows}
	var leaves func(n *pqNode)
	leaves = func(n *pqNode) {
		switch {
		case n.leaf:
			cols = append(cols, n.col)
		case n.repeated != nil:
			leaves(n.repeated)
		default:
			for _, f := range n.fields {
				leaves(f)
			}
		}
	}
	for _, top := range cs.root.fields {
		if top.leaf || top.repeated != nil || top.skip {
			continue // rowAction reads nothing of these
		}
		switch top.name {
		case actions.KindAdd, actions.KindRemove:
			leaves(top)
			continue
		case actions.KindCommitInfo:
		default:
			plan.others = append(plan.others, top)
		}
		cols = append(cols, top.first)
	}
	slices.Sort(cols)
	plan.cols = slices.Compact(cols)
	maxRep := map[int]int{}
	for _, path := range schema.Columns() {
		if lc, ok := schema.Lookup(path...); ok {
			maxRep[lc.ColumnIndex] = lc.MaxRepetitionLevel
		}
	}
	for _, c := range plan.cols {
		plan.repeated = append(plan.repeated, maxRep[c] > 0)
	}
	return plan
}

// readColumnRange appends the actions of rows [start, end) of rg to
// acts, reading column-wise. done is false when the chunk holds more than
// maxOthers actions other than add and remove, or when the column
// reader fails: the caller then reads the chunk row by row.
func readColumnRange(rg parquet.RowGroup, start, end int64, cs *checkpointSchema, acts cpActions) (_ cpActions, done bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			pq.CheckLibraryPanic(p) // a bug of ours is not a reason to read row by row
			done, err = false, nil
		}
	}()
	cols, others := cs.columns.cols, cs.columns.others
	chunks := rg.ColumnChunks()
	curs := make([]*columnCursor, len(cols))
	defer func() {
		for _, c := range curs {
			if c != nil {
				c.close()
			}
		}
	}()
	for i, col := range cols {
		if col >= len(chunks) {
			return cpActions{}, false, nil
		}
		c := &columnCursor{pages: chunks[col].Pages(), repeated: cs.columns.repeated[i]}
		curs[i] = c
		if start > 0 {
			if err := c.pages.SeekToRow(start); err != nil {
				return cpActions{}, false, nil
			}
		}
	}
	rv := rowView{cols: make([][]parquet.Value, cs.ncols)}
	otherRows := 0
	for pos := start; pos < end; pos++ {
		for i, c := range curs {
			if !c.repeated && c.i < c.n && len(c.held) <= 1 {
				// nextRow's common case, inline: the row's one value,
				// from the page the previous row's came from.
				c.i++
				rv.cols[cols[i]] = c.buf[c.i-1 : c.i]
				continue
			}
			vals, err := c.nextRow()
			if err != nil || len(vals) == 0 {
				return cpActions{}, false, nil
			}
			rv.cols[cols[i]] = vals
		}
		if holdsOther(&rv, others) {
			// protocol, metaData, txn...: the row is read alone by the row
			// reader, and the chunk goes on column-wise. A chunk of many
			// such rows is read row by row.
			if otherRows++; otherRows > cs.columns.maxOthers {
				return cpActions{}, false, nil
			}
			if acts, err = readRowRange(rg, pos, pos+1, cs, acts); err != nil {
				return cpActions{}, false, nil
			}
			continue
		}
		a, ok, err := cs.rowAction(&rv)
		if err != nil {
			return cpActions{}, false, nil
		}
		if ok {
			acts.take(a)
		}
	}
	return acts, true, nil
}

// holdsOther reports whether the row of rv holds one of the actions
// others.
func holdsOther(rv *rowView, others []*pqNode) bool {
	for _, top := range others {
		if rv.present(top) {
			return true
		}
	}
	return false
}

// columnCursor reads the values of one column chunk row by row.
type columnCursor struct {
	pages    parquet.Pages
	repeated bool
	vr       parquet.ValueReader // values of the newest page; nil between pages
	// held are the pages whose values the current row may still use (the
	// newest last), released once it is done.
	held []parquet.Page
	buf  []parquet.Value
	i, n int             // buf[i:n] are read and not yet returned
	row  []parquet.Value // a row whose values span two reads of buf
	eof  bool
}

// fill makes buf[i:n] non-empty, unless the column has no more values.
func (c *columnCursor) fill() error {
	for c.i >= c.n && !c.eof {
		if c.vr == nil {
			p, err := c.pages.ReadPage()
			if errors.Is(err, io.EOF) {
				c.eof = true
				return nil
			}
			if err != nil {
				return err
			}
			c.held = append(c.held, p) // ours to release (ReadPage's contract)
			c.vr = p.Values()
		}
		if c.buf == nil {
			c.buf = make([]parquet.Value, 512)
		}
		n, err := c.vr.ReadValues(c.buf)
		c.i, c.n = 0, n
		if errors.Is(err, io.EOF) {
			c.vr = nil
		} else if err != nil {
			return err
		}
	}
	return nil
}

// nextRow returns the values of the next row (empty at the end of the
// column). They are valid until the next call. readColumnRange reads the
// common case itself (see there).
func (c *columnCursor) nextRow() ([]parquet.Value, error) {
	// Pages before the newest hold only values of rows already returned.
	if len(c.held) > 1 {
		for _, p := range c.held[:len(c.held)-1] {
			parquet.Release(p)
		}
		c.held = append(c.held[:0], c.held[len(c.held)-1])
	}
	if err := c.fill(); err != nil || c.i >= c.n {
		return nil, err
	}
	if !c.repeated {
		c.i++
		return c.buf[c.i-1 : c.i], nil
	}
	if c.buf[c.i].RepetitionLevel() != 0 {
		return nil, fmt.Errorf("row starts with repetition level %d", c.buf[c.i].RepetitionLevel())
	}
	lo := c.i
	c.i++
	for c.i < c.n && c.buf[c.i].RepetitionLevel() != 0 {
		c.i++
	}
	if c.i < c.n {
		return c.buf[lo:c.i], nil
	}
	// The row may go on in the next read: gather it in c.row.
	c.row = append(c.row[:0], c.buf[lo:c.i]...)
	for {
		if err := c.fill(); err != nil {
			return nil, err
		}
		if c.i >= c.n || c.buf[c.i].RepetitionLevel() == 0 {
			return c.row, nil
		}
		c.row = append(c.row, c.buf[c.i])
		c.i++
	}
}

func (c *columnCursor) close() {
	for _, p := range c.held {
		parquet.Release(p)
	}
	c.held = nil
	c.pages.Close()
}
