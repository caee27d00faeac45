// Command gendata writes a Delta table of many small parquet files for
// bench/rewrite.sh: 10 mixed columns (longs, ints, doubles, strings,
// timestamps and a nested struct), snappy-compressed like Spark's default,
// each file between -min and -max bytes, -size bytes in total, with a
// version-0 commit holding the protocol, the metadata and one add per file
// (stats with numRecords only).
//
// With -shape it writes instead a table of -files DuckDB-written files of
// -rows rows each in one of the shapes of bench/gen.DuckShape (matched,
// drift, reorder, alpha, widen, dv), through tools/duckcheck/shapes.mjs.
//
// usage: go run ./bench/cmd/gendata -dir DIR -size 1GiB
//
//	go run ./bench/cmd/gendata -dir DIR -shape drift -files 60 -rows 50000
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"

	"github.com/compactord/compactord/bench/gen"
	"github.com/compactord/compactord/internal/units"
)

func main() {
	dir := flag.String("dir", "", "table directory to create (must not exist)")
	size := flag.String("size", "1GiB", "total bytes of data files")
	minSize := flag.String("min", "1MiB", "smallest file")
	maxSize := flag.String("max", "4MiB", "largest file")
	seed := flag.Uint64("seed", 1, "random seed")
	zstdFlag := flag.Bool("zstd", false, "compress with zstd instead of snappy")
	shape := flag.String("shape", "", "write DuckDB sources of this shape instead (see bench/gen.Shapes)")
	files := flag.Int("files", 60, "files of a -shape table")
	rows := flag.Int("rows", 50000, "rows per file of a -shape table")
	script := flag.String("duckscript", "tools/duckcheck/shapes.mjs", "the DuckDB script writing -shape sources")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "gendata: -dir is required")
		os.Exit(2)
	}
	if *shape != "" {
		if err := gen.DuckShape(context.Background(), *dir, *script, *shape, *files, *rows); err != nil {
			fmt.Fprintln(os.Stderr, "gendata:", err)
			os.Exit(1)
		}
		return
	}
	total, err1 := units.ParseBytes(*size)
	lo, err2 := units.ParseBytes(*minSize)
	hi, err3 := units.ParseBytes(*maxSize)
	if err1 != nil || err2 != nil || err3 != nil || lo > hi {
		fmt.Fprintln(os.Stderr, "gendata: bad -size/-min/-max")
		os.Exit(2)
	}
	var codec compress.Codec = &parquet.Snappy
	if *zstdFlag {
		codec = &parquet.Zstd
	}
	if err := gen.Generate(*dir, total, lo, hi, *seed, codec); err != nil {
		fmt.Fprintln(os.Stderr, "gendata:", err)
		os.Exit(1)
	}
}
