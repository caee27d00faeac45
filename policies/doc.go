// Package policies owns the per-table HCL policy files of the daemon: their
// schema, the one home of their defaults, validation with file:line:col
// diagnostics, and loading a policy directory (also on reload).
//
// A directory holds one file per table (any name ending in .hcl) plus an
// optional daemon file with a `daemon {}` block (process settings) and a
// `defaults {}` block (table settings every table inherits). A table block
// overrides the defaults attribute by attribute.
//
// The package must not run anything: it neither opens tables nor schedules
// work. The scheduler and the binary consume the Policy values it returns.
package policies
