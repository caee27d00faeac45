package writer

import (
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding"
	"github.com/parquet-go/parquet-go/format"
)

// The column path writes a column dictionary-encoded when its sources do
// and it is small: every source holds it in dictionary-encoded chunks only
// (every data page dictionary-encoded), and its uncompressed bytes
// over all sources are at most dictBytesPerRow per row, so that the
// dictionaries are small and the indexes short. Such columns (categories,
// dates, enumerations) would otherwise go to the output as plain values,
// every one of them through the compressor; dictionary-encoded they are a
// few bits a row, as the sources had them. Other columns stay plain, as the
// unsorted path writes them.

// dictBytesPerRow bounds the sources' uncompressed bytes per row of a
// column the column path dictionary-encodes.
const dictBytesPerRow = 2

// dictionaryColumns reports, for each data-schema column, whether the
// column path writes it dictionary-encoded (see above).
func dictionaryColumns(srcs []*sortedSource, leaves []parquet.LeafColumn, rows int64) []bool {
	dict := make([]bool, len(leaves))
	if len(srcs) == 0 {
		return dict
	}
	for c, leaf := range leaves {
		if leaf.Node.Type().Kind() == parquet.Boolean {
			continue
		}
		var bytes int64
		ok := true
		for _, s := range srcs {
			src := s.scan.SourceColumn(c)
			if src < 0 {
				ok = false
				break
			}
			for _, rg := range s.scan.File().Metadata().RowGroups {
				if src >= len(rg.Columns) || !dictionaryChunk(&rg.Columns[src].MetaData) {
					ok = false
					break
				}
			}
			bytes += s.colBytes[c]
		}
		dict[c] = ok && bytes <= dictBytesPerRow*rows
	}
	return dict
}

// dictionaryChunk reports whether a column chunk is dictionary-encoded
// throughout: by its page encoding statistics when it has them (every data
// page dictionary-encoded), else by its encodings (a dictionary encoding
// and levels only: a PLAIN there may be data pages that fell back).
func dictionaryChunk(md *format.ColumnMetaData) bool {
	dictEnc := func(e format.Encoding) bool { return e == format.PlainDictionary || e == format.RLEDictionary }
	if len(md.EncodingStats) > 0 {
		data := false
		for _, st := range md.EncodingStats {
			if st.PageType != format.DataPage && st.PageType != format.DataPageV2 {
				continue
			}
			if !dictEnc(st.Encoding) {
				return false
			}
			data = data || st.Count > 0
		}
		return data
	}
	dict := false
	for _, e := range md.Encoding {
		switch {
		case dictEnc(e):
			dict = true
		case e == format.RLE || e == format.BitPacked:
		default:
			return false
		}
	}
	return dict
}

// withDictionaries is schema with the leaf columns dict marks
// dictionary-encoded (RLE_DICTIONARY), nil when it marks none.
func withDictionaries(schema *parquet.Schema, dict []bool) *parquet.Schema {
	any := false
	for _, d := range dict {
		any = any || d
	}
	if !any {
		return nil
	}
	leaf := 0
	var wrap func(n parquet.Node) []parquet.Field
	wrap = func(n parquet.Node) []parquet.Field {
		fields := n.Fields()
		out := make([]parquet.Field, len(fields))
		for i, f := range fields {
			if f.Leaf() {
				ef := encodedField{Field: f}
				if dict[leaf] {
					ef.enc = &parquet.RLEDictionary
				}
				leaf++
				out[i] = ef
				continue
			}
			out[i] = encodedField{Field: f, fields: wrap(f)}
		}
		return out
	}
	return parquet.NewSchema(schema.Name(), encodedGroup{Node: schema, fields: wrap(schema)})
}

// encodedField is a field of a schema with its encoding (leaves) or its
// fields (groups) replaced; the rest (name, type, levels, id) is the
// field's.
type encodedField struct {
	parquet.Field
	enc    encoding.Encoding
	fields []parquet.Field
}

func (f encodedField) Encoding() encoding.Encoding {
	if f.enc != nil {
		return f.enc
	}
	return f.Field.Encoding()
}

func (f encodedField) Fields() []parquet.Field {
	if f.fields != nil {
		return f.fields
	}
	return f.Field.Fields()
}

// encodedGroup is the root group of a schema with its fields replaced.
type encodedGroup struct {
	parquet.Node
	fields []parquet.Field
}

func (g encodedGroup) Fields() []parquet.Field { return g.fields }
