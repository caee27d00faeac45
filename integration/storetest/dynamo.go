package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/compactord/compactord/internal/testutil/stores"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/compactord/compactord/compaction"
	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/internal/testutil"
	"github.com/google/uuid"
	"gocloud.dev/blob"
)

var errProtocolExists = errors.New("protocol writer: commit exists")

// ProtocolWriter is a second, independent implementation of Delta's
// S3DynamoDBLogStore commit protocol, written from its description
// (BaseExternalLogStore.write, fixDeltaLog and listFrom; the item schema of
// S3DynamoDBLogStore), sharing no code with compactord's log store. Like
// Spark on S3A it copies T(N) to N.json with a check-then-put, not a
// conditional create, so the mutual exclusion comes from DynamoDB alone;
// and like the Java store it puts entries with the legacy Expected form.
type ProtocolWriter struct {
	ddb       *dynamodb.Client
	ddbTable  string
	tablePath string
	// bucket is rooted at the table directory.
	bucket *blob.Bucket
	// AfterEntry, when set, runs after the entry is put and before the
	// copy; returning false stops the write there (a stalled or dead
	// writer).
	AfterEntry func(version int64) bool
}

// NewProtocolWriter opens a protocol writer on the s3:// table at rawURL
// (a URL from S3DynamoTable), with entries keyed by tablePath.
func NewProtocolWriter(t testing.TB, rawURL, tablePath string) *ProtocolWriter {
	t.Helper()
	ctx := context.Background()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	c, err := stores.DynamoClient(ctx, q.Get("dynamodb_endpoint"))
	if err != nil {
		t.Fatal(err)
	}
	bq := url.Values{}
	for _, k := range []string{"endpoint", "region", "use_path_style"} {
		bq.Set(k, q.Get(k))
	}
	b, err := blob.OpenBucket(ctx, "s3://"+u.Host+"?"+bq.Encode())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return &ProtocolWriter{
		ddb: c, ddbTable: q.Get("dynamodb_table"), tablePath: tablePath,
		bucket: blob.PrefixedBucket(b, strings.Trim(u.Path, "/")+"/"),
	}
}

// SparkTablePath is the entry key Spark on S3A uses for the table at
// rawURL: "s3a://bucket/prefix" (the parent of _delta_log, no trailing
// slash).
func SparkTablePath(t testing.TB, rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return "s3a://" + u.Host + "/" + strings.Trim(u.Path, "/")
}

func protocolFile(v int64) string { return fmt.Sprintf("%020d.json", v) }

// ProtocolEntry is one item of the DynamoDB table as the protocol stores it.
type ProtocolEntry struct {
	FileName, TempPath string
	Complete           bool
	ExpireTime         int64 // 0: the item has none
}

// Entry reads the item of fileName (consistent read); nil when absent.
func (w *ProtocolWriter) Entry(ctx context.Context, fileName string) (*ProtocolEntry, error) {
	out, err := w.ddb.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      &w.ddbTable,
		ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{
			"tablePath": &types.AttributeValueMemberS{Value: w.tablePath},
			"fileName":  &types.AttributeValueMemberS{Value: fileName},
		},
	})
	if err != nil || out.Item == nil {
		return nil, err
	}
	return toProtocolEntry(out.Item)
}

func toProtocolEntry(item map[string]types.AttributeValue) (*ProtocolEntry, error) {
	e := &ProtocolEntry{}
	for name, dst := range map[string]*string{"fileName": &e.FileName, "tempPath": &e.TempPath} {
		s, ok := item[name].(*types.AttributeValueMemberS)
		if !ok {
			return nil, fmt.Errorf("item without string %s: %v", name, item)
		}
		*dst = s.Value
	}
	c, ok := item["complete"].(*types.AttributeValueMemberS)
	if !ok || (c.Value != "true" && c.Value != "false") {
		return nil, fmt.Errorf("item without complete \"true\"/\"false\": %v", item)
	}
	e.Complete = c.Value == "true"
	if n, ok := item["expireTime"].(*types.AttributeValueMemberN); ok {
		v, err := strconv.ParseInt(n.Value, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("expireTime %q: %w", n.Value, err)
		}
		e.ExpireTime = v
	}
	return e, nil
}

func (w *ProtocolWriter) put(ctx context.Context, e ProtocolEntry, overwrite bool) error {
	item := map[string]types.AttributeValue{
		"tablePath": &types.AttributeValueMemberS{Value: w.tablePath},
		"fileName":  &types.AttributeValueMemberS{Value: e.FileName},
		"tempPath":  &types.AttributeValueMemberS{Value: e.TempPath},
		"complete":  &types.AttributeValueMemberS{Value: strconv.FormatBool(e.Complete)},
	}
	if e.ExpireTime != 0 {
		item["expireTime"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(e.ExpireTime, 10)}
	}
	in := &dynamodb.PutItemInput{TableName: &w.ddbTable, Item: item}
	if !overwrite {
		in.Expected = map[string]types.ExpectedAttributeValue{"fileName": {Exists: aws.Bool(false)}}
	}
	_, err := w.ddb.PutItem(ctx, in)
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return errProtocolExists
	}
	return err
}

func (w *ProtocolWriter) exists(ctx context.Context, name string) (bool, error) {
	return w.bucket.Exists(ctx, "_delta_log/"+name)
}

// copyNoOverwrite is Hadoop's copyFile with create(overwrite=false) on S3A:
// an existence check, then a plain PUT.
func (w *ProtocolWriter) copyNoOverwrite(ctx context.Context, src, dst string) error {
	data, err := w.bucket.ReadAll(ctx, "_delta_log/"+src)
	if err != nil {
		return err
	}
	if ok, err := w.exists(ctx, dst); err != nil {
		return err
	} else if ok {
		return errProtocolExists
	}
	return w.bucket.WriteAll(ctx, "_delta_log/"+dst, data, nil)
}

func (w *ProtocolWriter) complete(ctx context.Context, e ProtocolEntry) error {
	e.Complete, e.ExpireTime = true, time.Now().Unix()+86400
	return w.put(ctx, e, true)
}

// fix is fixDeltaLog: copy T(N) unless N.json exists, mark complete.
func (w *ProtocolWriter) fix(ctx context.Context, e ProtocolEntry) error {
	if e.Complete {
		return nil
	}
	copied := false
	var err error
	for retry := 0; retry <= 3; retry++ {
		if !copied {
			var ok bool
			if ok, err = w.exists(ctx, e.FileName); err != nil {
				continue
			}
			if !ok {
				err = w.copyNoOverwrite(ctx, e.TempPath, e.FileName)
				if err != nil && !errors.Is(err, errProtocolExists) {
					continue
				}
			}
			copied = true
		}
		if err = w.complete(ctx, e); err == nil {
			return nil
		}
	}
	return err
}

// Latest is listFrom: repair the newest entry if incomplete, then list
// _delta_log and return the newest commit version (-1 for none).
func (w *ProtocolWriter) Latest(ctx context.Context) (int64, error) {
	out, err := w.ddb.Query(ctx, &dynamodb.QueryInput{
		TableName:              &w.ddbTable,
		ConsistentRead:         aws.Bool(true),
		ScanIndexForward:       aws.Bool(false),
		Limit:                  aws.Int32(1),
		KeyConditionExpression: aws.String("tablePath = :p"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":p": &types.AttributeValueMemberS{Value: w.tablePath},
		},
	})
	if err != nil {
		return -1, err
	}
	if len(out.Items) == 1 {
		e, err := toProtocolEntry(out.Items[0])
		if err != nil {
			return -1, err
		}
		if err := w.fix(ctx, *e); err != nil {
			return -1, err
		}
	}
	latest := int64(-1)
	it := w.bucket.List(&blob.ListOptions{Prefix: "_delta_log/", Delimiter: "/"})
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return latest, nil
		}
		if err != nil {
			return -1, err
		}
		name := strings.TrimPrefix(obj.Key, "_delta_log/")
		if len(name) == 25 && strings.HasSuffix(name, ".json") {
			if v, err := strconv.ParseInt(name[:20], 10, 64); err == nil {
				latest = max(latest, v)
			}
		}
	}
}

// Write is write(overwrite=false) of version v: errProtocolExists when
// another writer holds it. A write AfterEntry stopped returns nil.
func (w *ProtocolWriter) Write(ctx context.Context, v int64, body []byte) error {
	name := protocolFile(v)
	// Step 0.
	if ok, err := w.exists(ctx, name); err != nil {
		return err
	} else if ok {
		return errProtocolExists
	}
	// Step 1.
	if v > 0 {
		prev, err := w.Entry(ctx, protocolFile(v-1))
		if err != nil {
			return err
		}
		if prev != nil && !prev.Complete {
			if err := w.fix(ctx, *prev); err != nil {
				return err
			}
		} else if ok, err := w.exists(ctx, protocolFile(v-1)); err != nil {
			return err
		} else if !ok {
			return fmt.Errorf("previous commit %s doesn't exist", protocolFile(v-1))
		}
	}
	// Step 2.
	e := ProtocolEntry{FileName: name, TempPath: ".tmp/" + name + "." + uuid.NewString()}
	if err := w.bucket.WriteAll(ctx, "_delta_log/"+e.TempPath, body, nil); err != nil {
		return err
	}
	if err := w.put(ctx, e, false); err != nil {
		return err
	}
	if w.AfterEntry != nil && !w.AfterEntry(v) {
		return nil
	}
	// Steps 3 and 4: errors are ignored, the entry decided the commit.
	if err := w.copyNoOverwrite(ctx, e.TempPath, name); err == nil {
		_ = w.complete(ctx, e)
	}
	return nil
}

// Commit writes body(v) at the next version until it wins one and returns
// that version.
func (w *ProtocolWriter) Commit(ctx context.Context, body func(v int64) []byte) (int64, error) {
	for attempt := 0; attempt < 200; attempt++ {
		latest, err := w.Latest(ctx)
		if err != nil {
			return -1, err
		}
		err = w.Write(ctx, latest+1, body(latest+1))
		if err == nil {
			return latest + 1, nil
		}
		if !errors.Is(err, errProtocolExists) {
			return -1, err
		}
	}
	return -1, errors.New("protocol writer: no version won in 200 attempts")
}

// TxnCommit is a SET TRANSACTION commit body in Delta's JSON, with a
// txnId the checks look for.
func TxnCommit(txnID, appID string, version int64) []byte {
	var b bytes.Buffer
	now := time.Now().UnixMilli()
	fmt.Fprintf(&b, `{"commitInfo":{"timestamp":%d,"operation":"SET TRANSACTION","operationParameters":{},"isBlindAppend":true,"engineInfo":"storetest-protocol-writer","txnId":%q}}`+"\n", now, txnID)
	fmt.Fprintf(&b, `{"txn":{"appId":%q,"version":%d,"lastUpdated":%d}}`+"\n", appID, version, now)
	return b.Bytes()
}

// DynamoRace runs, at once on one table: `protocol` independent protocol
// writers and `txns` compactord transaction writers committing `each`
// commits apiece, a protocol writer that stalls after its entry (its commit
// left for others to publish), and a compaction. Every reported commit must
// be in the log exactly once, in contiguous versions, each published from
// its winning DynamoDB entry, and the compaction must keep every row.
func DynamoRace(t *testing.T, url string, protocol, txns, each int) {
	ctx := context.Background()
	tbls := stores.OpenN(t, url, txns+1)
	stores.CopyTable(t, testutil.DeltaTable(t, compactionTable), tbls[0])
	before, rowsBefore := stores.LiveRows(t, tbls[0])
	tablePath := SparkTablePath(t, url)

	var (
		mu       sync.Mutex
		reported = map[string]int64{} // txnId -> version its writer got
		errs     []error
		wg       sync.WaitGroup
	)
	record := func(id string, v int64, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", id, err))
			return
		}
		reported[id] = v
	}
	for w := 0; w < protocol; w++ {
		pw := NewProtocolWriter(t, url, tablePath)
		wg.Go(func() {
			for k := 0; k < each; k++ {
				id := fmt.Sprintf("protocol-w%d-k%d", w, k)
				v, err := pw.Commit(ctx, func(int64) []byte { return TxnCommit(id, fmt.Sprintf("protocol-%d", w), int64(k)) })
				record(id, v, err)
			}
		})
	}
	for w := 0; w < txns; w++ {
		tbl := tbls[w+1]
		wg.Go(func() {
			for k := 0; k < each; k++ {
				snap, err := delta.LoadSnapshot(ctx, tbl, -1)
				if err != nil {
					record(fmt.Sprintf("compactord-w%d-k%d", w, k), -1, err)
					return
				}
				tx := setTxn(tbl, snap, fmt.Sprintf("compactord-%d", w), int64(k), 200)
				v, err := tx.Commit(ctx)
				record(tx.TxnID(), v, err)
			}
		})
	}
	stalled := NewProtocolWriter(t, url, tablePath)
	stalled.AfterEntry = func(int64) bool { return false }
	res := &compaction.RunResult{}
	wg.Go(func() {
		opts := runOptions()
		opts.Commit.MaxAttempts = 200
		once := false
		opts.Commit.BeforePut = func(ctx context.Context, _ int64) error {
			if once {
				return nil
			}
			once = true
			v, err := stalled.Commit(ctx, func(int64) []byte { return TxnCommit("protocol-stalled", "protocol-stalled", 0) })
			record("protocol-stalled", v, err)
			return nil
		}
		r, err := compaction.Compact(ctx, tbls[0], opts)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs = append(errs, fmt.Errorf("compaction: %w", err))
		}
		if r != nil {
			res = r
		}
	})
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}

	after, rowsAfter := stores.LiveRows(t, tbls[0])
	total := int64(protocol*each + txns*each + 2)
	if got := after.Version - before.Version; got != total {
		t.Fatalf("%d commits after v%d, want %d (one per reported commit and the compaction)", got, before.Version, total)
	}
	ids := commitTxnIDs(t, tbls[0], before.Version+1, after.Version)
	inLog := map[string]int64{}
	for v, id := range ids {
		if prev, dup := inLog[id]; dup {
			t.Fatalf("txn %s committed twice: v%d and v%d", id, prev, v)
		}
		inLog[id] = v
	}
	lost := 0
	for id, v := range reported {
		if inLog[id] != v {
			lost++
			t.Errorf("commit %s reported at v%d, the log has it at v%d (0: absent)", id, v, inLog[id])
		}
	}
	if lost > 0 || len(reported) != int(total)-1 {
		t.Fatalf("%d of %d reported commits lost (%d reported, want %d)", lost, len(reported), len(reported), total-1)
	}
	if _, ok := ids[res.CommittedVersion]; !ok || res.FilesRemoved == 0 {
		t.Fatalf("compaction committed v%d removing %d files", res.CommittedVersion, res.FilesRemoved)
	}
	if l, x := rowsAfter.Diff(rowsBefore); len(l)+len(x) > 0 {
		t.Fatalf("rows changed: lost %v, extra %v", l, x)
	}
	checkEntriesComplete(t, tbls[0], stalled, before.Version+1, after.Version)
	for w := 0; w < protocol; w++ {
		if got := after.Txns[fmt.Sprintf("protocol-%d", w)].Version; got != int64(each-1) {
			t.Fatalf("protocol-%d watermark %d, want %d", w, got, each-1)
		}
	}
	t.Logf("%d protocol writers + %d compactord writers x %d commits, a stalled protocol writer and a compaction (v%d): v%d..v%d, %d versions, one winner each, %d commits lost",
		protocol, txns, each, res.CommittedVersion, before.Version+1, after.Version, len(ids), lost)
}
