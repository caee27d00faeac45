// Command compactord keeps Delta Lake tables compact while other engines
// write to them: one-shot commands (inspect, cat, plan, run-plan, compact,
// expire, vacuum, checkpoint, cleanup-log, backfill-stats, check, demo,
// version), the worker of a fanned-out run (run-unit) and the daemon
// (run); commands() in main.go is the list `compactord -h` prints. This
// package owns the binary: subcommands and flags, logging, signals and the
// HTTP endpoints (metrics, health, status, plan, run). Business logic lives
// in the library packages; see README.md.
package main
