// Command pagebomb writes a Delta table holding one parquet decompression
// bomb (internal/testutil/pagebomb) and a small honest file beside it, for
// bench/pagebomb.sh to measure what compacting it costs.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/compactord/compactord/internal/testutil/pagebomb"
)

func main() {
	dir := flag.String("dir", "", "table directory to create")
	rowGroups := flag.Int("row-groups", 1, "row groups of the bomb")
	pages := flag.Int("pages", 1, "pages per row group")
	pageBytes := flag.Int64("page-bytes", 1536<<20, "uncompressed bytes of each page (a multiple of 8, under 2 GiB)")
	hide := flag.Bool("hide-totals", false, "make the footer claim no more uncompressed bytes than compressed ones")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "pagebomb: -dir is required")
		os.Exit(2)
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "pagebomb:", err)
		os.Exit(1)
	}
	f := pagebomb.File{Name: "bomb.parquet", RowGroups: *rowGroups, Pages: *pages, PageBytes: *pageBytes, HideTotals: *hide}
	if err := pagebomb.WriteTable(*dir, f); err != nil {
		fmt.Fprintln(os.Stderr, "pagebomb:", err)
		os.Exit(1)
	}
}
