package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/google/uuid"
	"github.com/parquet-go/parquet-go"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/compactord/compactord/delta/logpath"
)

// lakePrefix is where the tables live in the bucket: lake/t00000/...
const lakePrefix = "lake/"

// row is the tables' schema: {id long, v string}.
type row struct {
	ID int64  `parquet:"id"`
	V  string `parquet:"v"`
}

const schemaString = `{"type":"struct","fields":[{"name":"id","type":"long","nullable":false,"metadata":{}},{"name":"v","type":"string","nullable":false,"metadata":{}}]}`

func tableName(i int) string { return fmt.Sprintf("t%05d", i) }

// s3Query is the query of an S3 URL on endpoint (path style, as versitygw
// wants).
func s3Query(endpoint string) string {
	return "endpoint=" + endpoint + "&region=us-east-1&use_path_style=true"
}

// ensureBucket creates the bucket unless it exists.
func ensureBucket(ctx context.Context, b *blob.Bucket, name string) error {
	var c *s3.Client
	if !b.As(&c) {
		return errors.New("the s3blob bucket is not an *s3.Client")
	}
	_, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &name})
	var ae smithy.APIError
	if errors.As(err, &ae) && (ae.ErrorCode() == "BucketAlreadyOwnedByYou" || ae.ErrorCode() == "BucketAlreadyExists") {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create bucket %s: %w", name, err)
	}
	return nil
}

// writer appends to the tables through the S3 API as another engine
// would: a small parquet file, then the next commit, put-if-absent.
type writer struct {
	b *blob.Bucket
}

// dataFile writes one parquet file of n rows under table and returns its
// add action line.
func (w writer) dataFile(ctx context.Context, table string, first int64, n int) (string, error) {
	rows := make([]row, n)
	for i := range rows {
		rows[i] = row{ID: first + int64(i), V: fmt.Sprintf("v%d", first+int64(i))}
	}
	var buf bytes.Buffer
	pw := parquet.NewGenericWriter[row](&buf)
	if _, err := pw.Write(rows); err != nil {
		return "", fmt.Errorf("table %s: encode parquet: %w", table, err)
	}
	if err := pw.Close(); err != nil {
		return "", fmt.Errorf("table %s: encode parquet: %w", table, err)
	}
	name := fmt.Sprintf("part-00000-%s-c000.snappy.parquet", uuid.NewString())
	if err := w.b.WriteAll(ctx, lakePrefix+table+"/"+name, buf.Bytes(), nil); err != nil {
		return "", fmt.Errorf("table %s: put %s: %w", table, name, err)
	}
	last := first + int64(n) - 1
	stats := fmt.Sprintf(`{"numRecords":%d,"minValues":{"id":%d,"v":"v%d"},"maxValues":{"id":%d,"v":"v%d"},"nullCount":{"id":0,"v":0}}`, n, first, first, last, last)
	add := map[string]any{"add": map[string]any{"path": name, "partitionValues": map[string]string{}, "size": buf.Len(),
		"modificationTime": time.Now().UnixMilli(), "dataChange": true, "stats": stats}}
	line, err := json.Marshal(add)
	return string(line), err
}

// commit puts version v of table, failing when it exists.
func (w writer) commit(ctx context.Context, table string, v int64, lines []string) error {
	key := lakePrefix + table + "/" + logpath.CommitKey(v)
	err := w.b.WriteAll(ctx, key, []byte(strings.Join(lines, "\n")+"\n"), &blob.WriterOptions{IfNotExist: true})
	if gcerrors.Code(err) == gcerrors.FailedPrecondition {
		return fmt.Errorf("table %s: version %d exists", table, v)
	}
	if err != nil {
		return fmt.Errorf("table %s: put %s: %w", table, key, err)
	}
	return nil
}

// create writes version 0 (protocol, metadata, one file) and commits more
// versions of one file each.
func (w writer) create(ctx context.Context, table string, commits int) error {
	ci := func(op string) string {
		return fmt.Sprintf(`{"commitInfo":{"timestamp":%d,"operation":%q,"engineInfo":"eventsbench"}}`, time.Now().UnixMilli(), op)
	}
	add, err := w.dataFile(ctx, table, 0, 10)
	if err != nil {
		return err
	}
	lines := []string{ci("CREATE TABLE"), `{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}`,
		fmt.Sprintf(`{"metaData":{"id":%q,"format":{"provider":"parquet","options":{}},"schemaString":%q,"partitionColumns":[],"configuration":{},"createdTime":%d}}`,
			uuid.NewString(), schemaString, time.Now().UnixMilli()), add}
	if err := w.commit(ctx, table, 0, lines); err != nil {
		return err
	}
	for v := int64(1); v < int64(commits); v++ {
		add, err := w.dataFile(ctx, table, v*10, 10)
		if err != nil {
			return err
		}
		if err := w.commit(ctx, table, v, []string{ci("WRITE"), add}); err != nil {
			return err
		}
	}
	return nil
}

// createAll creates the tables that are missing (a table whose version 0
// exists is kept as it is) with parallel writers; it returns each table's
// next version.
func (w writer) createAll(ctx context.Context, n, commits, parallel int) ([]int64, error) {
	next := make([]int64, n)
	var mu sync.Mutex
	var firstErr error
	work := make(chan int)
	var wg sync.WaitGroup
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				v, err := w.prepare(ctx, tableName(i), commits)
				mu.Lock()
				next[i] = v
				if err != nil && firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	return next, firstErr
}

// prepare creates table unless it exists and returns its next version.
func (w writer) prepare(ctx context.Context, table string, commits int) (int64, error) {
	ok, err := w.b.Exists(ctx, lakePrefix+table+"/"+logpath.CommitKey(0))
	if err != nil {
		return 0, fmt.Errorf("table %s: %w", table, err)
	}
	if !ok {
		if err := w.create(ctx, table, commits); err != nil {
			return 0, err
		}
		return int64(commits), nil
	}
	v := int64(0)
	for {
		ok, err := w.b.Exists(ctx, lakePrefix+table+"/"+logpath.CommitKey(v+1))
		if err != nil {
			return 0, fmt.Errorf("table %s: %w", table, err)
		}
		if !ok {
			return v + 1, nil
		}
		v++
	}
}
