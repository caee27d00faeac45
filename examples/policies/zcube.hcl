# zcube: multi-column clustering. Unclustered files and partial cubes are
# rewritten along a Hilbert curve over the clustering columns, and the
# outputs are tagged as a new cube (Delta's incremental clustering).
table "telemetry" {
  url      = "azblob://lake/telemetry"
  strategy = "zcube"
  schedule = "@hourly"

  clustering {
    columns = ["device_id", "ts"]
    # auto switches from lightweight to zcube once this many bytes were
    # written since the last clustering.
    max_unclustered_bytes = "10GiB"
    # Cubes that reached this size are not merged again.
    min_cube_size = "100GiB"
    # Smaller (partial) cubes merge this many adjacent ones at a time, only
    # while a partition holds more than 2 x sqrt(its files) of them. -1
    # merges every partial cube on every clustering run, as Delta does
    # (many more bytes rewritten).
    cube_merge_min_cubes = 4
  }

  triggers {
    small_files       = 0       # 0 turns a trigger off
    unclustered_bytes = "20GiB"
  }

  # Row retention: after each compaction run, rows whose ts is older than
  # 90 days are deleted (a DELETE commit at the table's isolation level).
  # Files whose stats prove every row expired are removed whole; partly
  # expired files get a deletion vector (copy-on-write on tables without
  # deletion vectors). On a partition column it is metadata-only.
  # `compactord expire URL --column ts --older-than 90d` runs it by hand.
  retention {
    column     = "ts"
    older_than = "90d"
    # Conflict-time data skipping: a concurrent writer's new files whose
    # stats prove they hold no expired rows do not conflict. Turn it off
    # to fall back to partition-only conflict checks.
    data_skipping = true
    # Timestamp partition values carry no zone; Spark writes them in its
    # session time zone. Name it here when that is not UTC.
    # time_zone = "America/Los_Angeles"
  }

  # VACUUM after the other operations, at most once per interval: the
  # files of tombstones older than the table's
  # delta.deletedFileRetentionDuration (7 days by default) and, on the full
  # runs, every unreferenced file past that window (abandoned writes,
  # upload temp files). auto = lite (from the log, no listing) and a full
  # vacuum every full_interval. Without this block the daemon only sweeps
  # temp leftovers of killed writes. `compactord vacuum URL` runs it by hand.
  vacuum {
    mode          = "auto"
    interval      = "24h"
    full_interval = "7d"
    # retention = "3d"          # shorter than the table's needs:
    # force_retention = true    # files concurrent writers still need may go
  }
}
