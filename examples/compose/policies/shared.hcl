# A table that Spark writers share through Delta's S3DynamoDBLogStore
# (spark.delta.logStore.s3a.impl=io.delta.storage.S3DynamoDBLogStore, table
# delta_log): compactord commits through the same DynamoDB table, so its
# commits and theirs exclude each other. The entries are keyed by
# s3a://lake/shared, the path as those writers address it (dynamodb_scheme
# defaults to s3a; set dynamodb_scheme=s3 if they use s3://).
table "shared" {
  url      = "s3://lake/shared?region=us-east-1&endpoint=http://s3:7070&use_path_style=true&log_store=dynamodb&dynamodb_table=delta_log&dynamodb_endpoint=http://dynamodb:8000"
  schedule = "@every 5m"
  strategy = "auto"

  settle_window = "5m"
}
