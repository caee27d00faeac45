// Package progressbar shows a command's operation progress: a bar on
// stderr when stdout and stderr are terminals and the output is not JSON,
// otherwise "progress" log lines at a phase's start, every few seconds and
// at its end (schollz/progressbar draws the bar).
//
// It must not write stdout (a command's stdout carries only its output),
// know any operation beyond internal/progress, or be imported by anything
// but cmd/compactord.
package progressbar
