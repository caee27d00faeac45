# The table compactord watches in docker-compose.yml: s3://lake/events on the
# versitygw container. Point your ingestion job at the same URL (endpoint
# http://localhost:7070 from the host, path-style, region us-east-1).
table "events" {
  url      = "s3://lake/events?region=us-east-1&endpoint=http://s3:7070&use_path_style=true"
  schedule = "@every 5m"
  strategy = "auto"

  settle_window = "5m"

  triggers {
    small_files = 20
  }
}
