// Command compactord keeps Delta Lake tables compact while other engines
// write to them: one-shot commands (inspect, cat, plan, run-plan, compact,
// expire, check, demo) and the daemon (run). This package owns the binary:
// subcommands and flags, logging, signals and the HTTP endpoints
// (metrics, health, status, plan, run). Business logic lives in the
// library packages; see README.md.
package main
