# A table can stay loaded (visible in /status and /metrics, its backlog
# polled) without ever being compacted.
table "legacy" {
  url     = "file:///data/legacy"
  enabled = false
}
