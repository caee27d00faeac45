# Daemon settings and table defaults. Optional: without this file every
# value below is the built-in default. At most one daemon block and one
# defaults block per policy directory (any file name ending in .hcl).

daemon {
  # How often each table's log is checked for new commits. An idle table
  # costs one existence check (a HEAD on object stores) per poll.
  poll = "1m"

  # Runs executing at once across all tables (one run per table at a time).
  workers = 2

  # /metrics, /healthz, /readyz, /status, /tables/{name}/plan, POST /tables/{name}/run.
  # --http on the command line overrides it.
  http = "127.0.0.1:9464"

  # SIGTERM waits this long for in-flight runs, then cancels them (their
  # uncommitted files are deleted) and exits 0.
  shutdown_timeout = "30s"

  # Exponential backoff with jitter after a failed run.
  backoff_base = "5s"
  backoff_max  = "10m"

  # Several daemons may watch the same tables: give each a distinct replica
  # name (or --replica) and every run first takes the table's lease
  # (<table>/_compactord/lease, compare-and-swap on the store). A table whose
  # lease another replica holds is skipped (result "skipped"); a run that
  # loses its lease is abandoned. Empty: a single replica, no leases.
  replica   = ""
  lease_ttl = "1m"

  # A run's start counts the intent record of an earlier run unmodified this
  # long as a killed run's, and deletes what it wrote and did not commit
  # (live runs rewrite theirs every minute; at least 5m).
  attempt_stale_after = "1h"
}

# Every table starts from these values; a table block overrides them one
# attribute at a time.
defaults {
  # Files younger than this are left alone: the ingestion job beside us may
  # still be writing their neighbours.
  settle_window = "15m"

  triggers {
    # Run when this many files are below min(min_file_size, target_file_size).
    small_files = 50
    # Run when deletion vectors hide this share of the table's rows.
    deleted_rows_ratio = 0.05
    # Run anyway when the last successful run is older than this and there
    # are at least two small files.
    max_time_since_last_run = "24h"
  }
}
