package logstore

import (
	"fmt"
	"net/url"
	"strings"
)

// URL query parameters that select and configure the DynamoDB log store of
// an s3:// table. They are removed before the bucket URL reaches the S3
// driver.
const (
	paramLogStore          = "log_store"
	paramDynamoTable       = "dynamodb_table"
	paramDynamoRegion      = "dynamodb_region"
	paramDynamoEndpoint    = "dynamodb_endpoint"
	paramDynamoTablePath   = "dynamodb_table_path"
	paramDynamoScheme      = "dynamodb_scheme"
	logStoreDynamoDB       = "dynamodb"
	defaultDynamoTable     = "delta_log"
	defaultDynamoScheme    = "s3a"
	defaultDynamoRegion    = "us-east-1"
	dynamoTablePathSchemes = "s3a, s3 or s3n"
)

// DynamoConfig is a table's DynamoDB log store, as its URL asks for it.
type DynamoConfig struct {
	// Table is the DynamoDB table holding the commit entries (Delta's
	// ddb.tableName, default "delta_log").
	Table string
	// Region and Endpoint override the SDK's chain when set.
	Region, Endpoint string
	// TablePath is the entries' hash key: the table path exactly as
	// Delta's BaseExternalLogStore derives it from the path Spark was
	// given, scheme included ("s3a://bucket/prefix").
	TablePath string
}

// SplitParams removes the log store parameters from u's query and
// returns the DynamoDB configuration they ask for (nil for the default
// put-if-absent store). A dynamodb_* parameter without log_store=dynamodb
// is an error: silently ignoring it would commit without the coordination
// the user asked for.
func SplitParams(u *url.URL) (*DynamoConfig, error) {
	q := u.Query()
	mode := q.Get(paramLogStore)
	cfg := &DynamoConfig{
		Table:    q.Get(paramDynamoTable),
		Region:   q.Get(paramDynamoRegion),
		Endpoint: q.Get(paramDynamoEndpoint),
	}
	tablePath, scheme := q.Get(paramDynamoTablePath), q.Get(paramDynamoScheme)
	var given []string
	for _, p := range []string{paramDynamoTable, paramDynamoRegion, paramDynamoEndpoint, paramDynamoTablePath, paramDynamoScheme} {
		if q.Has(p) {
			given = append(given, p)
		}
		q.Del(p)
	}
	q.Del(paramLogStore)
	u.RawQuery = q.Encode()

	switch mode {
	case "":
		if len(given) > 0 {
			return nil, fmt.Errorf("open table %s: %s given without %s=%s", StoreName(u), strings.Join(given, ", "), paramLogStore, logStoreDynamoDB)
		}
		return nil, nil
	case logStoreDynamoDB:
	default:
		return nil, fmt.Errorf("open table %s: %s=%q is not a log store (want %s, or no %s for S3's put-if-absent)", StoreName(u), paramLogStore, mode, logStoreDynamoDB, paramLogStore)
	}
	if u.Scheme != "s3" {
		return nil, fmt.Errorf("open table %s: %s=%s is for s3:// tables only", StoreName(u), paramLogStore, logStoreDynamoDB)
	}
	if cfg.Table == "" {
		cfg.Table = defaultDynamoTable
	}
	prefix := strings.Trim(u.Path, "/")
	if strings.Contains(prefix, "//") {
		return nil, fmt.Errorf("open table %s: the path has an empty segment; Hadoop would address another location than S3 keys under it", StoreName(u))
	}
	if tablePath != "" && scheme != "" {
		return nil, fmt.Errorf("open table %s: give %s or %s, not both", StoreName(u), paramDynamoTablePath, paramDynamoScheme)
	}
	if tablePath != "" {
		tp, err := url.Parse(tablePath)
		if err != nil {
			return nil, fmt.Errorf("open table %s: %s=%q: %w", StoreName(u), paramDynamoTablePath, tablePath, err)
		}
		scheme = tp.Scheme
		if tp.User != nil || tp.RawQuery != "" || tp.Fragment != "" || tp.Host != u.Host || strings.Trim(tp.Path, "/") != prefix || strings.HasSuffix(tp.Path, "/") && prefix != "" {
			return nil, fmt.Errorf("open table %s: %s=%q must name this table (%s://%s/%s, no user info, query or trailing slash); only its scheme may differ", StoreName(u), paramDynamoTablePath, tablePath, scheme, u.Host, prefix)
		}
	}
	if scheme == "" {
		scheme = defaultDynamoScheme
	}
	switch scheme {
	case "s3a", "s3", "s3n":
	default:
		return nil, fmt.Errorf("open table %s: DynamoDB table path scheme %q (want %s, as Spark addresses the table)", StoreName(u), scheme, dynamoTablePathSchemes)
	}
	cfg.TablePath = dynamoTablePath(scheme, u.Host, prefix)
	return cfg, nil
}

// dynamoTablePath renders a table path as Hadoop's Path prints the parent
// of _delta_log: "s3a://bucket/a/b", and "s3a://bucket/" for a table at the
// bucket root.
func dynamoTablePath(scheme, bucket, prefix string) string {
	return scheme + "://" + bucket + "/" + prefix
}

// StoreName names a store in errors and logs without its query string,
// which may carry endpoints but never credentials worth echoing.
func StoreName(u *url.URL) string {
	return u.Scheme + "://" + u.Host + u.EscapedPath()
}
