// Package archtest checks ARCHITECTURE.md's package table against the
// build: every package of the module has a row, every row names a package
// (or a directory of non-Go tools), a row's "imports" column lists exactly
// the packages of ours the package imports (tests excluded, as `go list`
// reports them), and an import goes only to a package of a lower layer.
//
// It owns that test and nothing else: it holds no code, and must not be
// imported.
package archtest
