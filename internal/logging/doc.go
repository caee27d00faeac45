// Package logging builds the binary's logger: hclog in text or JSON, every
// line passed through internal/redact's writer (no credentials of a table
// URL reach the output), and key/value arguments made readable where
// hclog's own rendering is not (durations as duration strings in JSON).
//
// It must not import anything of ours but internal/redact, or decide what
// is logged.
package logging
