package logstore

import (
	"net/url"
	"strings"
	"testing"
)

func TestSplitLogStoreParams(t *testing.T) {
	tests := []struct {
		name, url string
		want      *DynamoConfig
		rest      string // the query left for the S3 driver
		err       string
	}{
		{name: "no log store", url: "s3://b/t?region=eu-west-1", rest: "region=eu-west-1"},
		{name: "defaults: table delta_log, scheme s3a",
			url:  "s3://lake/events/?log_store=dynamodb&region=eu-west-1",
			want: &DynamoConfig{Table: "delta_log", TablePath: "s3a://lake/events"}, rest: "region=eu-west-1"},
		{name: "every parameter",
			url:  "s3://lake/a/b?log_store=dynamodb&dynamodb_table=commits&dynamodb_region=us-west-2&dynamodb_endpoint=http%3A%2F%2F127.0.0.1%3A4567&dynamodb_scheme=s3&endpoint=http%3A%2F%2Fs3",
			want: &DynamoConfig{Table: "commits", Region: "us-west-2", Endpoint: "http://127.0.0.1:4567", TablePath: "s3://lake/a/b"}, rest: "endpoint=http%3A%2F%2Fs3"},
		{name: "explicit table path with another scheme",
			url:  "s3://lake/events?log_store=dynamodb&dynamodb_table_path=s3n%3A%2F%2Flake%2Fevents",
			want: &DynamoConfig{Table: "delta_log", TablePath: "s3n://lake/events"}},
		{name: "table at the bucket root is Hadoop's s3a://bucket/",
			url:  "s3://lake?log_store=dynamodb",
			want: &DynamoConfig{Table: "delta_log", TablePath: "s3a://lake/"}},
		{name: "a path Spark prints decoded", url: "s3://lake/my%20table?log_store=dynamodb",
			want: &DynamoConfig{Table: "delta_log", TablePath: "s3a://lake/my table"}},
		{name: "dynamodb parameter without the log store", url: "s3://b/t?dynamodb_table=x", err: "dynamodb_table given without log_store=dynamodb"},
		{name: "unknown log store", url: "s3://b/t?log_store=zookeeper", err: `log_store="zookeeper" is not a log store`},
		{name: "not s3", url: "gs://b/t?log_store=dynamodb", err: "for s3:// tables only"},
		{name: "table path of another table", url: "s3://b/t?log_store=dynamodb&dynamodb_table_path=s3a%3A%2F%2Fb%2Fother", err: "must name this table"},
		{name: "table path with a trailing slash", url: "s3://b/t?log_store=dynamodb&dynamodb_table_path=s3a%3A%2F%2Fb%2Ft%2F", err: "must name this table"},
		{name: "table path with user info", url: "s3://b/t?log_store=dynamodb&dynamodb_table_path=s3a%3A%2F%2Fu%40b%2Ft", err: "must name this table"},
		{name: "both table path and scheme", url: "s3://b/t?log_store=dynamodb&dynamodb_table_path=s3a%3A%2F%2Fb%2Ft&dynamodb_scheme=s3", err: "not both"},
		{name: "a scheme Spark would not use", url: "s3://b/t?log_store=dynamodb&dynamodb_scheme=gs", err: `scheme "gs"`},
		{name: "empty path segment", url: "s3://b/a//t?log_store=dynamodb", err: "empty segment"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := url.Parse(tt.url)
			if err != nil {
				t.Fatal(err)
			}
			got, err := SplitParams(u)
			if (err == nil) != (tt.err == "") || err != nil && !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("err = %v, want one containing %q", err, tt.err)
			} else if err != nil {
				return
			}
			switch {
			case (got == nil) != (tt.want == nil):
				t.Fatalf("config = %+v, want %+v", got, tt.want)
			case got != nil && *got != *tt.want:
				t.Fatalf("config = %+v, want %+v", *got, *tt.want)
			}
			if u.RawQuery != tt.rest {
				t.Fatalf("query left for the S3 driver = %q, want %q", u.RawQuery, tt.rest)
			}
		})
	}
}
