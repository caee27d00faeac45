package logstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/objstore"
)

// The item schema of Delta's S3DynamoDBLogStore (storage-s3-dynamodb,
// S3DynamoDBLogStore.java): hash key tablePath (S), range key fileName (S),
// tempPath (S, relative to _delta_log), complete (S, "true"/"false"),
// expireTime (N, epoch seconds, complete entries only).
const (
	attrTablePath  = "tablePath"
	attrFileName   = "fileName"
	attrTempPath   = "tempPath"
	attrComplete   = "complete"
	attrExpireTime = "expireTime"

	// dynamoExpireDelay is Delta's default ddb.ttl: a complete entry may
	// go (DynamoDB TTL on expireTime) a day after its N.json was written.
	dynamoExpireDelay = 24 * time.Hour
	// dynamoTempDir is where Delta writes T(N), inside _delta_log/.
	dynamoTempDir = ".tmp/"
	// maxRepairAttempts is fixDeltaLog's retry bound (it gives up after
	// the fourth failure).
	maxRepairAttempts = 4
)

// dynamoEntry is one commit entry E(N, T(N), complete).
type dynamoEntry struct {
	FileName   string // "00000000000000000007.json"
	TempPath   string // ".tmp/00000000000000000007.json.<uuid>"
	Complete   bool
	ExpireTime int64 // 0 when absent
}

// Dynamo commits through Delta's DynamoDB protocol
// (BaseExternalLogStore.write): write T(N) under _delta_log/.tmp/, put
// E(N, T(N), complete=false) only if no entry for N exists (the mutual
// exclusion), copy T(N) to N.json, put E again with complete=true and an
// expireTime. Readers repair the newest entry when it is incomplete
// (SyncLog), as BaseExternalLogStore.listFrom does. Control objects
// (the lease) and keys that are not commits go to the S3 store itself.
type Dynamo struct {
	s3        *Blob
	bucket    *blob.Bucket
	store     string
	client    *dynamodb.Client
	ddbTable  string
	tablePath string
	timeout   time.Duration
	logger    hclog.Logger
	// afterEntry, when set, runs after the entry of a commit is put and
	// before its copy (DynamoOptions.AfterLogEntry).
	afterEntry func(ctx context.Context, key string)
	now        func() time.Time
	// maxTemp bounds the temp file a repair copies (ReadLimits.LogFile).
	maxTemp int64

	mu       sync.Mutex
	checked  bool
	checkErr error
}

var (
	_ LogStore                  = (*Dynamo)(nil)
	_ objstore.ConditionalStore = (*Dynamo)(nil)
)

// DynamoOptions are what the DynamoDB log store takes of a table's open
// options (delta.OpenOptions has the same fields).
type DynamoOptions struct {
	// Store sets the deadline of every DynamoDB call (MetadataTimeout).
	Store objstore.Options
	// Logger receives the log store's warnings (nil: none).
	Logger hclog.Logger
	// AfterLogEntry, when set, runs after a commit's entry is put and
	// before its copy.
	AfterLogEntry func(ctx context.Context, key string)
	// Limits bound the temp file a repair copies (LogFile).
	Limits ReadLimits
}

// NewDynamo builds the DynamoDB client from the SDK's default
// chain (credentials, AWS_ENDPOINT_URL_DYNAMODB), with the URL's
// dynamodb_endpoint over it. The region is dynamodb_region, else Delta's
// ddb.region default us-east-1, never AWS_REGION: a region other than the
// Spark writers' is another DynamoDB table, and no exclusion at all.
func NewDynamo(ctx context.Context, s3 *Blob, cfg *DynamoConfig, opts DynamoOptions) (*Dynamo, error) {
	region := cfg.Region
	if region == "" {
		region = defaultDynamoRegion
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, config.WithRegion(region))
	if err != nil {
		return nil, fmt.Errorf("dynamodb log store for %s: aws config: %w", s3.store, err)
	}
	client := dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
	})
	logger := opts.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	timeout := opts.Store.MetadataTimeout
	if timeout <= 0 {
		timeout = objstore.DefaultOptions().MetadataTimeout
	}
	return &Dynamo{
		s3:         s3,
		bucket:     s3.bucket,
		store:      s3.store,
		client:     client,
		ddbTable:   cfg.Table,
		tablePath:  cfg.TablePath,
		timeout:    timeout,
		logger:     logger.With("table_path", cfg.TablePath, "dynamodb_table", cfg.Table),
		afterEntry: opts.AfterLogEntry,
		now:        time.Now,
		maxTemp:    opts.Limits.WithDefaults().LogFile,
	}, nil
}

// Probe checks that the DynamoDB table exists with Delta's key schema
// (tablePath HASH S, fileName RANGE S). The first completed check is kept.
func (s *Dynamo) Probe(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.checked {
		return s.checkErr
	}
	err := s.describe(ctx)
	if err == nil || errors.Is(err, ErrDynamoDBLogStore) {
		s.checked, s.checkErr = true, err
	}
	return err
}

func (s *Dynamo) describe(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	out, err := s.client.DescribeTable(cctx, &dynamodb.DescribeTableInput{TableName: &s.ddbTable})
	var nf *types.ResourceNotFoundException
	if errors.As(err, &nf) {
		return fmt.Errorf("%w: DynamoDB table %q does not exist; create it as Delta documents: aws dynamodb create-table --table-name %s --attribute-definitions AttributeName=tablePath,AttributeType=S AttributeName=fileName,AttributeType=S --key-schema AttributeName=tablePath,KeyType=HASH AttributeName=fileName,KeyType=RANGE --billing-mode PAY_PER_REQUEST",
			ErrDynamoDBLogStore, s.ddbTable, s.ddbTable)
	}
	if err != nil {
		return fmt.Errorf("dynamodb log store: describe table %s: %w", s.ddbTable, err)
	}
	td := out.Table
	attrTypes := map[string]types.ScalarAttributeType{}
	for _, a := range td.AttributeDefinitions {
		attrTypes[aws.ToString(a.AttributeName)] = a.AttributeType
	}
	var hash, rng string
	for _, k := range td.KeySchema {
		switch k.KeyType {
		case types.KeyTypeHash:
			hash = aws.ToString(k.AttributeName)
		case types.KeyTypeRange:
			rng = aws.ToString(k.AttributeName)
		}
	}
	if hash != attrTablePath || rng != attrFileName || attrTypes[attrTablePath] != types.ScalarAttributeTypeS || attrTypes[attrFileName] != types.ScalarAttributeTypeS {
		return fmt.Errorf("%w: DynamoDB table %q has key schema HASH %q RANGE %q; Delta's log store needs HASH tablePath (S), RANGE fileName (S)",
			ErrDynamoDBLogStore, s.ddbTable, hash, rng)
	}
	if td.TableStatus != types.TableStatusActive && td.TableStatus != types.TableStatusUpdating {
		return fmt.Errorf("dynamodb log store: table %s is %s, not ACTIVE", s.ddbTable, td.TableStatus)
	}
	return nil
}

// PutIfAbsent implements LogStore: for a commit N.json, Delta's
// write(overwrite=false). Steps 3 and 4 (the copy and the completion) are
// best effort, as in Delta: once the entry is ours the commit is decided,
// and the next reader or writer finishes it. The one exception is a copy
// that finds N.json holding other bytes: a writer that does not use this
// DynamoDB table wrote it, so this commit is not in the log and the caller
// gets ErrCommitExists (its commit loop then retries at N+1).
func (s *Dynamo) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	name, inLog := strings.CutPrefix(key, logpath.LogDir)
	v, isCommit := commitFileVersion(name)
	if !inLog || !isCommit {
		return PutIfAbsentBlob(ctx, s.bucket, s.store, key, data, "application/json")
	}
	if err := s.Probe(ctx); err != nil {
		return err
	}
	// Step 0: N.json must not exist.
	if ok, err := s.bucket.Exists(ctx, key); err != nil {
		return fmt.Errorf("commit %s on %s: %w", key, s.store, err)
	} else if ok {
		return fmt.Errorf("commit %s on %s: %w", key, s.store, ErrCommitExists)
	}
	// Step 1: N-1 must be in the log; repair it when its entry is
	// incomplete.
	if err := s.ensurePrevious(ctx, v); err != nil {
		return err
	}
	// Step 2: T(N), then the entry, only if none exists for N.
	e := dynamoEntry{FileName: name, TempPath: dynamoTempDir + name + "." + uuid.NewString()}
	if err := s.bucket.Upload(ctx, logpath.LogDir+e.TempPath, bytes.NewReader(data), &blob.WriterOptions{ContentType: "application/json"}); err != nil {
		return fmt.Errorf("commit %s on %s: write temp file %s: %w", key, s.store, e.TempPath, err)
	}
	won, err := s.putNewEntry(ctx, e)
	if err != nil {
		// T(N) stays: an entry naming it may have landed.
		return fmt.Errorf("commit %s on %s: %w", key, s.store, err)
	}
	if !won {
		// No entry names our temp file: it is garbage.
		_ = s.bucket.Delete(context.WithoutCancel(ctx), logpath.LogDir+e.TempPath)
		s.repairBestEffort(ctx, name)
		return fmt.Errorf("commit %s on %s: entry exists in DynamoDB table %s: %w", key, s.store, s.ddbTable, ErrCommitExists)
	}
	if s.afterEntry != nil {
		s.afterEntry(ctx, key)
	}
	// Step 3: copy T(N) to N.json (we hold its bytes).
	err = PutIfAbsentBlob(ctx, s.bucket, s.store, key, data, "application/json")
	switch {
	case errors.Is(err, ErrCommitExists):
		s.logger.Error("a writer that does not use this DynamoDB table wrote the commit this writer's entry holds; mixing log stores on one table loses commits",
			"version", v, "key", key)
		if cerr := s.putComplete(ctx, e); cerr != nil {
			s.logger.Warn("marking the entry complete failed", "version", v, "error", cerr)
		}
		return fmt.Errorf("commit %s on %s: the DynamoDB entry is ours but %s holds another writer's commit (a writer without the DynamoDB log store): %w", key, s.store, key, ErrCommitExists)
	case err != nil:
		s.logger.Warn("copying the committed temp file failed; the next reader or writer repairs it", "version", v, "temp", e.TempPath, "error", err)
		return nil
	}
	// Step 4: acknowledge.
	if err := s.putComplete(ctx, e); err != nil {
		s.logger.Warn("marking the entry complete failed; the next reader or writer repairs it", "version", v, "error", err)
	}
	return nil
}

// ensurePrevious is step 1 of Delta's write: for N > 0, an incomplete entry
// of N-1 is repaired, and without one N-1.json must exist; for N = 0, a
// complete entry without 00000000000000000000.json means entries of a
// deleted table at the same path are still there.
func (s *Dynamo) ensurePrevious(ctx context.Context, v int64) error {
	if v == 0 {
		e, err := s.getEntry(ctx, commitFileName(0))
		if err != nil || e == nil || !e.Complete {
			return err
		}
		ok, err := s.bucket.Exists(ctx, logpath.CommitKey(0))
		if err != nil {
			return fmt.Errorf("commit %s on %s: %w", logpath.CommitKey(0), s.store, err)
		}
		if !ok {
			return fmt.Errorf("%w: old entries for table path %s still exist in DynamoDB table %s (delete them before recreating the table)", ErrDynamoDBLogStore, s.tablePath, s.ddbTable)
		}
		return nil
	}
	prev, err := s.getEntry(ctx, commitFileName(v-1))
	if err != nil {
		return err
	}
	if prev != nil && !prev.Complete {
		return s.repair(ctx, *prev)
	}
	ok, err := s.bucket.Exists(ctx, logpath.CommitKey(v-1))
	if err != nil {
		return fmt.Errorf("commit %s on %s: %w", logpath.CommitKey(v), s.store, err)
	}
	if !ok {
		return fmt.Errorf("commit %s on %s: previous commit %s does not exist: %w", logpath.CommitKey(v), s.store, logpath.CommitKey(v-1), logpath.ErrVersionNotFound)
	}
	return nil
}

// putNewEntry puts e (incomplete) only if no entry for its file exists.
// won is false when another writer's entry is there. A put whose outcome
// is unknown, or that the SDK retried into a refusal, is settled by
// reading the entry back: T(N)'s name is ours alone.
func (s *Dynamo) putNewEntry(ctx context.Context, e dynamoEntry) (won bool, err error) {
	var lastErr error
	for attempt := 0; attempt < maxLogPutAttempts; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, s.timeout)
		_, err := s.client.PutItem(cctx, &dynamodb.PutItemInput{
			TableName:           &s.ddbTable,
			Item:                s.item(e),
			ConditionExpression: aws.String("attribute_not_exists(" + attrFileName + ")"),
		})
		cancel()
		if err == nil {
			return true, nil
		}
		var ccf *types.ConditionalCheckFailedException
		refused := errors.As(err, &ccf)
		if !refused && !dynamoAmbiguous(err) {
			return false, fmt.Errorf("put entry %s in %s: %w", e.FileName, s.ddbTable, err)
		}
		lastErr = err
		got, gerr := s.getEntry(ctx, e.FileName)
		switch {
		case gerr != nil:
			return false, fmt.Errorf("put entry %s in %s: %w: %w (read-back failed: %w)", e.FileName, s.ddbTable, objstore.ErrAmbiguous, err, gerr)
		case got != nil:
			return got.TempPath == e.TempPath, nil
		case refused:
			// Refused yet absent: the other entry expired in between.
		}
		if werr := objstore.Sleep(ctx, time.Duration(attempt+1)*50*time.Millisecond); werr != nil {
			return false, fmt.Errorf("put entry %s in %s: %w: %w", e.FileName, s.ddbTable, objstore.ErrAmbiguous, err)
		}
	}
	return false, fmt.Errorf("put entry in %s: %w after %d attempts: %w", s.ddbTable, objstore.ErrAmbiguous, maxLogPutAttempts, lastErr)
}

// dynamoAmbiguous reports whether a failed DynamoDB call may have been
// applied: anything but a refusal the service answered with before acting.
func dynamoAmbiguous(err error) bool {
	var ae smithy.APIError
	if errors.As(err, &ae) && ae.ErrorFault() == smithy.FaultClient {
		// Refused before acting: validation, missing table, throttling.
		return false
	}
	return !errors.Is(err, context.Canceled)
}

// putComplete overwrites e's entry with complete="true" and expireTime
// now+1 day (ExternalCommitEntry.asComplete).
func (s *Dynamo) putComplete(ctx context.Context, e dynamoEntry) error {
	e.Complete = true
	e.ExpireTime = s.now().Add(dynamoExpireDelay).Unix()
	cctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if _, err := s.client.PutItem(cctx, &dynamodb.PutItemInput{TableName: &s.ddbTable, Item: s.item(e)}); err != nil {
		return fmt.Errorf("mark entry %s complete in %s: %w", e.FileName, s.ddbTable, err)
	}
	return nil
}

// repair is Delta's fixDeltaLog: unless N.json exists, copy T(N) to it,
// then mark the entry complete; up to four tries.
func (s *Dynamo) repair(ctx context.Context, e dynamoEntry) error {
	if e.Complete {
		return nil
	}
	target := logpath.LogDir + e.FileName
	copied := false
	var err error
	for attempt := 1; ; attempt++ {
		err = s.repairOnce(ctx, e, target, &copied)
		if err == nil {
			s.logger.Info("repaired an incomplete commit entry", "file", e.FileName, "temp", e.TempPath)
			return nil
		}
		var cf *failure.CorruptFileError
		if errors.Is(err, ErrDynamoDBLogStore) || errors.As(err, &cf) || attempt >= maxRepairAttempts {
			return fmt.Errorf("repair %s on %s: %w", target, s.store, err)
		}
		if werr := objstore.Sleep(ctx, time.Duration(attempt)*100*time.Millisecond); werr != nil {
			return fmt.Errorf("repair %s on %s: %w (after %w)", target, s.store, werr, err)
		}
	}
}

func (s *Dynamo) repairOnce(ctx context.Context, e dynamoEntry, target string, copied *bool) error {
	if !*copied {
		ok, err := s.bucket.Exists(ctx, target)
		if err != nil {
			return err
		}
		if !ok {
			data, _, err := ReadBounded(ctx, s.bucket, logpath.LogDir+e.TempPath, s.maxTemp, "LogFile")
			var tl *TooLargeError
			if errors.As(err, &tl) {
				// Copied, it would be a commit no reader can load.
				return &failure.CorruptFileError{Kind: failure.Commit, Path: logpath.LogDir + e.TempPath, Err: err}
			}
			if gcerrors.Code(err) == gcerrors.NotFound {
				return fmt.Errorf("%w: entry %s is incomplete and its temp file %s%s is gone", ErrDynamoDBLogStore, e.FileName, logpath.LogDir, e.TempPath)
			}
			if err != nil {
				return err
			}
			// Conditional, so a concurrent repairer or the writer itself
			// (same bytes) or anyone else who got there first keeps N.json.
			if err := PutIfAbsentBlob(ctx, s.bucket, s.store, target, data, "application/json"); err != nil && !errors.Is(err, ErrCommitExists) {
				return err
			}
		}
		*copied = true
	}
	return s.putComplete(ctx, e)
}

// repairBestEffort repairs the entry of name when it is incomplete, so that
// a writer that lost the entry sees the winner's N.json when it reads the
// log again; a failure is left to the next reader.
func (s *Dynamo) repairBestEffort(ctx context.Context, name string) {
	e, err := s.getEntry(ctx, name)
	if err == nil && e != nil {
		err = s.repair(ctx, *e)
	}
	if err != nil {
		s.logger.Debug("repairing the winning entry failed", "file", name, "error", err)
	}
}

// SyncLog is what Delta's listFrom does before listing _delta_log: query
// the newest entry of the table (consistent read, descending, limit 1) and
// repair it when incomplete, so that a commit decided in DynamoDB but not
// yet copied is in the listing that follows. It returns the entry's
// version, or -1 without one.
func (s *Dynamo) SyncLog(ctx context.Context) (int64, error) {
	cctx, cancel := context.WithTimeout(ctx, s.timeout)
	out, err := s.client.Query(cctx, &dynamodb.QueryInput{
		TableName:                 &s.ddbTable,
		ConsistentRead:            aws.Bool(true),
		ScanIndexForward:          aws.Bool(false),
		Limit:                     aws.Int32(1),
		KeyConditionExpression:    aws.String(attrTablePath + " = :p"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: s.tablePath}},
	})
	cancel()
	if err != nil {
		return -1, fmt.Errorf("latest entry of %s in %s: %w", s.tablePath, s.ddbTable, err)
	}
	if len(out.Items) == 0 {
		return -1, nil
	}
	e, err := parseDynamoEntry(out.Items[0])
	if err != nil {
		return -1, fmt.Errorf("latest entry of %s in %s: %w", s.tablePath, s.ddbTable, err)
	}
	if err := s.repair(ctx, e); err != nil {
		return -1, err
	}
	v, err := strconv.ParseInt(strings.SplitN(e.FileName, ".", 2)[0], 10, 64)
	if err != nil {
		return -1, nil
	}
	return v, nil
}

func (s *Dynamo) getEntry(ctx context.Context, name string) (*dynamoEntry, error) {
	cctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	out, err := s.client.GetItem(cctx, &dynamodb.GetItemInput{
		TableName:      &s.ddbTable,
		ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{
			attrTablePath: &types.AttributeValueMemberS{Value: s.tablePath},
			attrFileName:  &types.AttributeValueMemberS{Value: name},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("get entry %s of %s in %s: %w", name, s.tablePath, s.ddbTable, err)
	}
	if out.Item == nil {
		return nil, nil
	}
	e, err := parseDynamoEntry(out.Item)
	if err != nil {
		return nil, fmt.Errorf("get entry %s of %s in %s: %w", name, s.tablePath, s.ddbTable, err)
	}
	return &e, nil
}

func (s *Dynamo) item(e dynamoEntry) map[string]types.AttributeValue {
	it := map[string]types.AttributeValue{
		attrTablePath: &types.AttributeValueMemberS{Value: s.tablePath},
		attrFileName:  &types.AttributeValueMemberS{Value: e.FileName},
		attrTempPath:  &types.AttributeValueMemberS{Value: e.TempPath},
		attrComplete:  &types.AttributeValueMemberS{Value: strconv.FormatBool(e.Complete)},
	}
	if e.ExpireTime != 0 {
		it[attrExpireTime] = &types.AttributeValueMemberN{Value: strconv.FormatInt(e.ExpireTime, 10)}
	}
	return it
}

func parseDynamoEntry(it map[string]types.AttributeValue) (dynamoEntry, error) {
	str := func(name string) (string, error) {
		v, ok := it[name].(*types.AttributeValueMemberS)
		if !ok {
			return "", fmt.Errorf("%w: entry has no string attribute %q", ErrDynamoDBLogStore, name)
		}
		return v.Value, nil
	}
	var e dynamoEntry
	var err error
	if e.FileName, err = str(attrFileName); err != nil {
		return e, err
	}
	if e.TempPath, err = str(attrTempPath); err != nil {
		return e, err
	}
	c, err := str(attrComplete)
	if err != nil {
		return e, err
	}
	e.Complete = c == "true"
	if n, ok := it[attrExpireTime].(*types.AttributeValueMemberN); ok {
		e.ExpireTime, _ = strconv.ParseInt(n.Value, 10, 64)
	}
	return e, nil
}

// commitFileName is "%020d.json", the fileName of version v's entry.
func commitFileName(v int64) string { return strings.TrimPrefix(logpath.CommitKey(v), logpath.LogDir) }

// commitFileVersion parses a commit file name ("%020d.json").
func commitFileVersion(name string) (int64, bool) {
	f, ok := logpath.Parse(name)
	return f.Version, ok && f.Kind == logpath.Commit
}

// ReadVersioned implements objstore.ConditionalStore on the S3 store.
func (s *Dynamo) ReadVersioned(ctx context.Context, key string) ([]byte, string, error) {
	return s.s3.ReadVersioned(ctx, key)
}

// CreateIfAbsent implements objstore.ConditionalStore on the S3 store.
func (s *Dynamo) CreateIfAbsent(ctx context.Context, key string, data []byte) error {
	return s.s3.CreateIfAbsent(ctx, key, data)
}

// ReplaceIfMatch implements objstore.ConditionalStore on the S3 store.
func (s *Dynamo) ReplaceIfMatch(ctx context.Context, key string, data []byte, token string) error {
	return s.s3.ReplaceIfMatch(ctx, key, data, token)
}
