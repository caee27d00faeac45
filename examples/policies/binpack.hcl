# binpack: concatenate small files of each partition into files of about
# target_file_size. Rows are copied in order, so concurrent deletion-vector
# DELETEs on the inputs are remapped onto the outputs instead of aborting.
table "clicks" {
  url      = "s3://lake/clicks?region=us-east-1"
  strategy = "binpack"
  # Cron (5 fields) or descriptors such as "@hourly" / "@every 10m". Leave
  # it out to run only on triggers, SIGUSR1 and POST /tables/clicks/run.
  schedule = "*/10 * * * *"

  # Sizes accept B, KiB, MiB, GiB, TiB (powers of 1024) and KB, MB, GB, TB.
  # 0 means the table property delta.targetFileSize, else 128MiB.
  target_file_size = "256MiB"
  # Files at least this big are not merged (they may still be purged).
  min_file_size = "192MiB"
  # A file whose deletion vector hides more than this share of its rows is
  # rewritten on its own (a purge), whatever its size.
  max_deleted_rows_ratio = 0.1
  settle_window          = "30m"

  # Bounded runs: at most this many input bytes and jobs per run; the rest
  # waits for the next run. 0 = unlimited.
  max_bytes_per_run = "20GiB"
  max_jobs_per_run  = 50
  # Which jobs go first under the caps: files-desc, files-asc, bytes-desc,
  # bytes-asc or oldest-first.
  job_order = "files-desc"

  # Partial progress: commit finished jobs in batches of this many, and
  # whatever has finished at least every commit_interval, so a failure
  # loses at most the jobs not yet committed. Unset (0): one commit at the
  # end of the run.
  commit_every_jobs = 10
  commit_interval   = "10m"

  # Parquet codec of rewritten files: zstd, snappy, gzip or none.
  compression = "zstd"
  # Rewrite jobs of one run executed at once (memory grows with it).
  concurrency = 2

  triggers {
    small_files = 100
  }
}
