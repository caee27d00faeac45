// Package progress carries how far a long table operation is (files and
// bytes done of their totals) from the operation to whoever shows it: the
// command's progress bar or log lines, the daemon's log and /status.
//
// It owns the Progress value, the Func callback the operations take in
// their options, and Tracker, the goroutine-safe counter an operation
// reports through. It must not render anything, know any operation or
// import anything of compactord: the operations import it, and only
// cmd/compactord turns it into a bar or a log line.
package progress
