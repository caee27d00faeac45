package writer

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/pq"
	deltaprops "github.com/compactord/compactord/delta/props"
)

// Defaults used when an Options field is zero. See DefaultOptions.
const (
	// DefaultTargetFileSize is used when neither the policy nor the table
	// property delta.targetFileSize sets a target (Spark's OPTIMIZE default).
	DefaultTargetFileSize = 128 << 20
	// DefaultRowGroupBytes bounds the bytes one output buffers before it
	// flushes a row group. parquet-go's own default is unbounded, which would
	// make memory grow with the output size.
	DefaultRowGroupBytes = 64 << 20
	// DefaultRowGroupRows bounds the rows of one row group.
	DefaultRowGroupRows = 1 << 20
	// DefaultReadBufferSize is the size of one ranged GET on a source object.
	// Small buffers turn one file into thousands of GETs.
	DefaultReadBufferSize = 4 << 20
	// DefaultBatchRows is how many rows move from a source to an output per call.
	DefaultBatchRows = 1024
	// DefaultZstdLevel is zstd level 1: on the benchmark data it cost 25%
	// less CPU than level 3 for outputs 0.8% larger (bench/rewrite.sh).
	DefaultZstdLevel = 1
	// DefaultPageBufferSize is the uncompressed size of one parquet page
	// (per column, buffered unencoded in memory for every open output).
	DefaultPageBufferSize = 512 << 10
)

// Compression names accepted in Options.Compression.
const (
	CompressionZstd   = "zstd"
	CompressionSnappy = "snappy"
	CompressionGzip   = "gzip"
	CompressionNone   = "none"
)

// ErrInvalidOptions is wrapped by every error Options.Validate returns.
var ErrInvalidOptions = errors.New("invalid writer options")

// Options tune a rewrite. The zero value of every field means "default";
// DefaultOptions fills them in explicitly.
type Options struct {
	// TargetFileSize is the size (bytes) at which an output is closed, at
	// the next source boundary. 0: the table's delta.targetFileSize, else
	// DefaultTargetFileSize.
	TargetFileSize int64
	// RowGroupBytes flushes a row group once the output buffers this many
	// bytes (compressed pages plus unencoded values). With InMemoryPages it
	// also bounds the memory of each open output. 0: DefaultRowGroupBytes.
	RowGroupBytes int64
	// RowGroupRows caps the rows of one row group. 0: DefaultRowGroupRows.
	RowGroupRows int64
	// PageBufferSize is the uncompressed page size. 0: DefaultPageBufferSize.
	PageBufferSize int
	// Compression is "zstd" (default), "snappy", "gzip" or "none".
	Compression string
	// ZstdLevel is the zstd level (1..22 as the zstd CLI counts).
	// 0: DefaultZstdLevel.
	ZstdLevel int
	// ReadBufferSize is the largest ranged read on a source, per column
	// chunk being read; a source gets min(ReadBufferSize, its size divided
	// by its column count, at least 64 KiB), so small files do not hold
	// large buffers. 0: DefaultReadBufferSize.
	ReadBufferSize int
	// BatchRows is the number of rows copied per read/write call. 0: DefaultBatchRows.
	BatchRows int
	// MaxConcurrentJobs bounds how many jobs RewriteAll runs at once. Each
	// job runs two goroutines (one reads and decodes, the other encodes,
	// compresses and uploads, and does about three quarters of the work),
	// so one job per core keeps the cores busy. 0: GOMAXPROCS.
	MaxConcurrentJobs int
	// DisableCopyPath turns off the whole-row-group paths (page copy of
	// large row groups and packs of small sources, for DV-free sources of
	// the data schema): every row then goes through the row path. Used to
	// benchmark and to cross-check the paths.
	DisableCopyPath bool
	// SpillDir is where the compressed pages of the row group being built
	// wait (one temp file per column chunk, unlinked as soon as it is
	// created so nothing outlives the writer), so that an output's memory
	// is its unencoded page buffers only, whatever RowGroupBytes is.
	// "": os.TempDir().
	SpillDir string
	// InMemoryPages keeps those pages on the heap instead (faster on a
	// slow disk; memory then grows with RowGroupBytes per open output).
	InMemoryPages bool
	// Sort tunes sorted (clustering) rewrites: memory bound of the
	// external sort and of the origin map, buckets, sample (sort.go).
	Sort SortOptions
	// Logger receives progress and cleanup messages. nil: a null logger.
	Logger hclog.Logger
	// SourceRead, when set, is called after each source file has been read
	// whole (its rows copied or collected), from the job's goroutine: jobs
	// run concurrently, so it must be safe for concurrent use.
	SourceRead func(src *actions.Add)

	// forceScan sends every source through the Delta core's FileScan, even
	// those whose schema allows direct reading (tests cross-check the paths).
	forceScan bool
	// rowTracking makes the FileScan append each row's stable row id and
	// row commit version (set by the job when the table's row tracking is
	// enabled; see rowtracking.go).
	rowTracking bool
	// copyMinBytes overrides the smallest source row group the copy path
	// takes (RowGroupBytes/2); tests use it on tiny fixtures.
	copyMinBytes int64
	// encodeHook is called by the pack's column encoder before each column
	// (tests order its workers with it; see encode.go).
	encodeHook encodeHook
}

// DefaultOptions returns Options with every default spelled out. The target
// file size stays 0 so that the table property applies.
func DefaultOptions() Options {
	return Options{
		RowGroupBytes:     DefaultRowGroupBytes,
		RowGroupRows:      DefaultRowGroupRows,
		PageBufferSize:    DefaultPageBufferSize,
		Compression:       CompressionZstd,
		ZstdLevel:         DefaultZstdLevel,
		ReadBufferSize:    DefaultReadBufferSize,
		BatchRows:         DefaultBatchRows,
		MaxConcurrentJobs: runtime.GOMAXPROCS(0),
		Logger:            hclog.NewNullLogger(),
	}
}

// minSourcePageLimit is the smallest page limit a small row group budget
// sets: eight times the 1 MiB pages engines write.
const minSourcePageLimit = 8 << 20

// sourcePages is what a source's pages may claim: no page above the row
// group budget (RowGroupBytes, between minSourcePageLimit and
// pq.DefaultMaxPageBytes), since a page is decoded whole and one larger
// than the budget breaks it, and the default ratio of a column chunk. With
// the default budget, 64 MiB: 64 times the page size of every engine, so
// only a value of more than 64 MiB (or a decompression bomb) makes a
// source corrupt.
func (o Options) sourcePages() pq.PageLimits {
	budget := cmp.Or(o.RowGroupBytes, DefaultRowGroupBytes)
	return pq.PageLimits{MaxPageBytes: min(max(budget, minSourcePageLimit), pq.DefaultMaxPageBytes)}
}

// withDefaults returns o with zero fields replaced by defaults.
func (o Options) withDefaults() Options {
	d := DefaultOptions()
	o.RowGroupBytes = cmp.Or(o.RowGroupBytes, d.RowGroupBytes)
	o.RowGroupRows = cmp.Or(o.RowGroupRows, d.RowGroupRows)
	o.PageBufferSize = cmp.Or(o.PageBufferSize, d.PageBufferSize)
	o.Compression = cmp.Or(o.Compression, d.Compression)
	o.ZstdLevel = cmp.Or(o.ZstdLevel, d.ZstdLevel)
	o.ReadBufferSize = cmp.Or(o.ReadBufferSize, d.ReadBufferSize)
	o.BatchRows = cmp.Or(o.BatchRows, d.BatchRows)
	o.MaxConcurrentJobs = cmp.Or(o.MaxConcurrentJobs, d.MaxConcurrentJobs)
	if o.Logger == nil {
		o.Logger = d.Logger
	}
	if o.SpillDir == "" {
		o.SpillDir = os.TempDir()
	}
	return o
}

// Validate reports the first invalid field (after defaults are applied).
func (o Options) Validate() error {
	o = o.withDefaults()
	switch {
	case o.TargetFileSize < 0:
		return fmt.Errorf("%w: TargetFileSize %d < 0", ErrInvalidOptions, o.TargetFileSize)
	case o.RowGroupBytes < 1<<10:
		return fmt.Errorf("%w: RowGroupBytes %d < 1 KiB", ErrInvalidOptions, o.RowGroupBytes)
	case o.RowGroupRows < 1:
		return fmt.Errorf("%w: RowGroupRows %d < 1", ErrInvalidOptions, o.RowGroupRows)
	case o.PageBufferSize < 1<<10:
		return fmt.Errorf("%w: PageBufferSize %d < 1 KiB", ErrInvalidOptions, o.PageBufferSize)
	case o.ReadBufferSize < 4<<10:
		return fmt.Errorf("%w: ReadBufferSize %d < 4 KiB", ErrInvalidOptions, o.ReadBufferSize)
	case o.BatchRows < 1:
		return fmt.Errorf("%w: BatchRows %d < 1", ErrInvalidOptions, o.BatchRows)
	case o.ZstdLevel < 1 || o.ZstdLevel > 22:
		return fmt.Errorf("%w: ZstdLevel %d outside 1..22", ErrInvalidOptions, o.ZstdLevel)
	case o.MaxConcurrentJobs < 1:
		return fmt.Errorf("%w: MaxConcurrentJobs %d < 1", ErrInvalidOptions, o.MaxConcurrentJobs)
	}
	if _, _, err := codecFor(o.Compression); err != nil {
		return err
	}
	return nil
}

// codecFor maps a compression name to the parquet codec and the file-name
// infix Spark uses for it ("" for uncompressed: part-...c000.parquet).
func codecFor(name string) (compress.Codec, string, error) {
	switch strings.ToLower(name) {
	case CompressionZstd, "":
		return newZstdCodec(DefaultPageBufferSize, DefaultZstdLevel), ".zstd", nil
	case CompressionSnappy:
		return &parquet.Snappy, ".snappy", nil
	case CompressionGzip:
		return &parquet.Gzip, ".gz", nil
	case CompressionNone, "uncompressed":
		return &parquet.Uncompressed, "", nil
	}
	return nil, "", fmt.Errorf("%w: unknown compression %q (want zstd, snappy, gzip or none)", ErrInvalidOptions, name)
}

// targetFileSize resolves the output target: the policy value, else the
// table property delta.targetFileSize, else DefaultTargetFileSize.
func targetFileSize(o Options, snap *delta.Snapshot) (int64, error) {
	if o.TargetFileSize > 0 {
		return o.TargetFileSize, nil
	}
	props := snap.Properties()
	if err := props.Check(deltaprops.PropTargetFileSize); err != nil {
		return 0, err
	}
	if props.TargetFileSize > 0 {
		return props.TargetFileSize, nil
	}
	return DefaultTargetFileSize, nil
}
