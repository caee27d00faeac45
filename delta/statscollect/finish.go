package statscollect

import (
	"math/big"
	"strconv"
	"time"

	deltaschema "github.com/compactord/compactord/delta/schema"
)

// Finish returns the statistics JSON of the rows observed since the last
// Reset, shaped as Spark writes it: numRecords, minValues, maxValues,
// nullCount (each only when some column qualifies), then tightBounds.
func (c *StatsCollector) Finish() (string, error) {
	var b []byte
	b = append(b, `{"numRecords":`...)
	b = strconv.AppendInt(b, c.numRecords, 10)
	hasMinMax, hasNulls := false, false
	for _, n := range c.root {
		hasMinMax = hasMinMax || n.minMax
		hasNulls = hasNulls || c.hasLeaf(n)
	}
	if hasMinMax {
		b = append(b, `,"minValues":`...)
		b = c.appendMinMax(b, c.root, false)
		b = append(b, `,"maxValues":`...)
		b = c.appendMinMax(b, c.root, true)
	}
	if hasNulls {
		b = append(b, `,"nullCount":`...)
		b = c.appendNulls(b, c.root)
	}
	if c.tight {
		b = append(b, `,"tightBounds":true`...)
	}
	b = append(b, '}')
	return string(b), nil
}

func (c *StatsCollector) hasLeaf(n *statsNode) bool {
	if n.leaf >= 0 {
		return true
	}
	for _, ch := range n.children {
		if c.hasLeaf(ch) {
			return true
		}
	}
	return false
}

func (c *StatsCollector) appendMinMax(b []byte, nodes []*statsNode, max bool) []byte {
	b = append(b, '{')
	first := true
	for _, n := range nodes {
		if !n.minMax {
			continue
		}
		mark := len(b)
		if !first {
			b = append(b, ',')
		}
		b = deltaschema.AppendJSONString(b, n.name)
		b = append(b, ':')
		if n.leaf < 0 {
			b = c.appendMinMax(b, n.children, max)
		} else {
			var ok bool
			b, ok = c.appendBound(b, &c.leaves[n.leaf], max)
			if !ok {
				b = b[:mark]
				continue
			}
		}
		first = false
	}
	return append(b, '}')
}

// appendBound renders a leaf's min or max; ok is false when there is none.
func (c *StatsCollector) appendBound(b []byte, l *leafStats, max bool) ([]byte, bool) {
	if !l.seen || l.nonFinit {
		return b, false
	}
	pickI := l.minI
	pickF := l.minF
	pickB := l.minB
	if max {
		pickI, pickF, pickB = l.maxI, l.maxF, l.maxB
	}
	switch l.cat {
	case catInt:
		return strconv.AppendInt(b, pickI, 10), true
	case catFloat:
		return appendJSONFloat(b, pickF, l.float32), true
	case catDate:
		return append(append(append(b, '"'), time.Unix(pickI*86400, 0).UTC().Format("2006-01-02")...), '"'), true
	case catTimestamp, catTimestampNTZ:
		us := scaleTimestamp(pickI, l.tsMul, l.tsDiv)
		layout := "2006-01-02T15:04:05.000Z07:00"
		if l.cat == catTimestampNTZ {
			layout = "2006-01-02T15:04:05.000"
		}
		return append(append(append(b, '"'), time.UnixMicro(us).UTC().Format(layout)...), '"'), true
	case catString:
		s := string(pickB)
		if max {
			t, ok := TruncateStringMax(s, c.prefixLen)
			if !ok {
				return b, false
			}
			s = t
		} else {
			s = TruncateStringMin(s, c.prefixLen)
		}
		return deltaschema.AppendJSONString(b, s), true
	case catDecimal:
		if l.decBytes {
			return AppendDecimal(b, TwosComplementInt(pickB), l.scale), true
		}
		return AppendDecimal(b, big.NewInt(pickI), l.scale), true
	}
	return b, false
}

func (c *StatsCollector) appendNulls(b []byte, nodes []*statsNode) []byte {
	b = append(b, '{')
	first := true
	for _, n := range nodes {
		if !c.hasLeaf(n) {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = deltaschema.AppendJSONString(b, n.name)
		b = append(b, ':')
		if n.leaf < 0 {
			b = c.appendNulls(b, n.children)
			continue
		}
		l := &c.leaves[n.leaf]
		nulls := l.nulls
		if l.col < 0 {
			nulls = c.numRecords // column absent from the data: all null
		}
		b = strconv.AppendInt(b, nulls, 10)
	}
	return append(b, '}')
}
