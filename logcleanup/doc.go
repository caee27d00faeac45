// Package logcleanup is the expired-log cleanup table operation
// (PROTOCOL.md "Metadata Cleanup"): below the newest checkpoint that is at
// or before the retention cutoff it deletes commits, checkpoints, version
// checksums and log compaction files, then the sidecars no remaining
// checkpoint references. It never deletes anything that no checkpoint
// covers, honours checkpointProtection, writes the V2 compatibility
// checkpoint first on V2 tables, and refuses catalog-managed tables.
// `compactord cleanup-log` and the daemon both call Cleanup.
//
// It must not schedule anything, holds no state between runs, and never
// touches data files or commits to the table.
package logcleanup
