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
  }

  triggers {
    small_files       = 0       # 0 turns a trigger off
    unclustered_bytes = "20GiB"
  }

  # Row retention (parsed and validated; executed by `compactord expire`).
  retention {
    column     = "ts"
    older_than = "90d"
  }
}
