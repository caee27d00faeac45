// Package pq owns what every reader of parquet objects in compactord
// shares: opening a file's footer (OpenParquet), the ranged ObjectReaderAt
// over a blob, the PageGuard that refuses pages over the read limits,
// bounded thrift decoding, the classification of a data file's read error
// (DataFileError, MissingOr), and the one panic guard.
//
// The panic guard (Guard, RecoverParquet, InputPanic, CheckLibraryPanic)
// is the only place that recovers a panic from parquet-go, the Roaring
// decoder or a blob driver. Its rule: a recovered panic is taken for
// malformed input only when the first frame below runtime.gopanic that is
// neither the runtime nor the standard library belongs to one of those
// libraries (parquet-go and its codecs, roaring, gocloud.dev and the cloud
// SDKs); it then becomes a *failure.CorruptFileError naming the object
// (Guard) or an error wrapping ErrCorruptParquet for the caller to name
// (RecoverParquet). A panic raised in compactord's own code, including a
// callback of ours that parquet-go calls, is raised again, so that a real
// bug crashes the test (and the daemon) loudly instead of quarantining a
// good file. Its limit: a misuse of parquet-go by us that makes parquet-go
// itself panic is taken for bad input.
//
// It is not internal/: writer/ and statsbackfill/ open parquet objects too
// and must use the same guard. It must not know about tables, actions or
// the log; it imports failure, objstore and internal/units only.
package pq
