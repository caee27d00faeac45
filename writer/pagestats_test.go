package writer

import (
	"io"
	"os"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// checkPageStatsInColumnIndex checks that every column chunk of pf has a
// column index (the pages' min/max) and that its first data page header
// holds no statistics of its own, as parquet-mr writes them.
func checkPageStatsInColumnIndex(t *testing.T, f *os.File, pf *parquet.File) {
	t.Helper()
	for gi, rg := range pf.RowGroups() {
		for ci, cc := range rg.ColumnChunks() {
			idx, err := cc.ColumnIndex()
			if err != nil || idx.NumPages() == 0 {
				t.Fatalf("row group %d column %d: column index %v, %v", gi, ci, idx, err)
			}
			meta := pf.Metadata().RowGroups[gi].Columns[ci].MetaData
			var h format.PageHeader
			sr := io.NewSectionReader(f, meta.DataPageOffset, meta.TotalCompressedSize)
			if err := thrift.NewDecoder(new(thrift.CompactProtocol).NewReader(sr)).Decode(&h); err != nil {
				t.Fatalf("row group %d column %d: page header: %v", gi, ci, err)
			}
			var st format.Statistics
			if h.DataPageHeader.Valid {
				st = h.DataPageHeader.V.Statistics
			} else {
				st = h.DataPageHeaderV2.V.Statistics
			}
			if st.MinValue != nil || st.MaxValue != nil || st.Min != nil || st.Max != nil {
				t.Fatalf("row group %d column %d: page header statistics %+v", gi, ci, st)
			}
		}
	}
}
