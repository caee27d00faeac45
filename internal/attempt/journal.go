package attempt

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"regexp"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// RecordsDir is the directory, relative to the table root, that holds the
// intent records of the table's local attempts (<attempt-id>.json).
const RecordsDir = "_compactord/attempts/"

// MaxRecordBytes bounds the read of an intent record: a record names the
// keys of one attempt (a few hundred bytes each, thousands at most), and
// one a writer of the table made huge is refused unread.
const MaxRecordBytes = 64 << 20

// DefaultHeartbeat is how often a live attempt rewrites its record.
const DefaultHeartbeat = time.Minute

// DefaultStaleAfter is how long a record may go unmodified before its
// attempt counts as dead: well above DefaultHeartbeat, and above any clock
// skew between this host and the store.
const DefaultStaleAfter = time.Hour

// recordFormat is the format of a Record.
const recordFormat = 1

// Store is what a Journal needs of the table's bucket; *blob.Bucket
// implements it.
type Store interface {
	WriteAll(ctx context.Context, key string, p []byte, opts *blob.WriterOptions) error
}

// Record is the content of an intent record: who runs the attempt, and
// every key it tracked (before the object was created).
type Record struct {
	Format    int       `json:"format"`
	Attempt   string    `json:"attempt"`
	Operation string    `json:"operation"`
	Owner     string    `json:"owner"`
	Started   time.Time `json:"started"`
	Heartbeat time.Time `json:"heartbeat"`
	Keys      []string  `json:"keys"`
}

// Journal persists the intent record of one local attempt at
// RecordsDir/<attempt-id>.json: its Track is the Objects.OnTrack hook (the
// record is rewritten, one put, before the object is created), and a
// goroutine rewrites it every heartbeat so that a record not modified for
// longer than a staleness window well above the heartbeat belongs to a dead
// attempt (liveness is the store's modification time of the record).
// Close stops the heartbeat and deletes the record once the attempt has
// cleaned up after itself.
type Journal struct {
	store Store
	key   string
	now   func() time.Time
	ctx   context.Context // for Track's writes: the start's values, never canceled

	mu     sync.Mutex
	record Record
	err    error

	stop chan struct{}
	done chan struct{}
}

// JournalOptions configure StartJournal.
type JournalOptions struct {
	// Heartbeat is how often the record is rewritten (default
	// DefaultHeartbeat).
	Heartbeat time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Attempt is the attempt's id (default: a fresh time-ordered one).
	Attempt string
	// Key is where the record is kept (default RecordsDir/<attempt>.json):
	// a fanned-out unit's worker keeps its record beside its plan.
	Key string
}

// StartJournal writes the first record of a new attempt of operation
// (under the table root the store keys are relative to) and starts its
// heartbeat. An attempt whose record cannot be written must not write
// anything: the error says so.
func StartJournal(ctx context.Context, store Store, operation string, opts JournalOptions) (*Journal, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = DefaultHeartbeat
	}
	id := opts.Attempt
	if id == "" {
		var err error
		if id, err = newAttemptID(opts.Now()); err != nil {
			return nil, err
		}
	}
	key := cmp.Or(opts.Key, RecordsDir+id+".json")
	host, _ := os.Hostname()
	at := opts.Now().UTC()
	j := &Journal{store: store, key: key, now: opts.Now, ctx: context.WithoutCancel(ctx),
		record: Record{Format: recordFormat, Attempt: id, Operation: operation,
			Owner: fmt.Sprintf("%s/pid %d", host, os.Getpid()), Started: at, Heartbeat: at, Keys: []string{}},
		stop: make(chan struct{}), done: make(chan struct{})}
	if err := j.write(ctx); err != nil {
		return nil, err
	}
	go j.beat(j.ctx, opts.Heartbeat)
	return j, nil
}

// newAttemptID is a time-ordered random id.
func newAttemptID(at time.Time) (string, error) {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("attempt id: %w", err)
	}
	return at.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b), nil
}

// Key is the record's key.
func (j *Journal) Key() string { return j.key }

// Attempt is the attempt's id.
func (j *Journal) Attempt() string { return j.record.Attempt }

// Track is the Objects.OnTrack hook: it adds key to the record and
// rewrites it before returning. A failed write is kept for Err.
func (j *Journal) Track(key string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.record.Keys = append(j.record.Keys, key)
	if err := j.writeLocked(j.ctx); err != nil && j.err == nil {
		j.err = err
	}
}

// Err is the first failed write of the record since it was started: a
// key may be missing from it.
func (j *Journal) Err() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.err
}

// beat rewrites the record every interval until Close.
func (j *Journal) beat(ctx context.Context, interval time.Duration) {
	defer close(j.done)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-j.stop:
			return
		case <-tick.C:
			j.mu.Lock()
			j.record.Heartbeat = j.now().UTC()
			if err := j.writeLocked(ctx); err != nil && j.err == nil {
				j.err = err
			}
			j.mu.Unlock()
		}
	}
}

func (j *Journal) write(ctx context.Context) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.writeLocked(ctx)
}

func (j *Journal) writeLocked(ctx context.Context) error {
	data, err := json.Marshal(j.record)
	if err != nil {
		return fmt.Errorf("encode intent record %s: %w", j.key, err)
	}
	if err := j.store.WriteAll(ctx, j.key, data, nil); err != nil {
		return fmt.Errorf("write intent record %s: %w", j.key, err)
	}
	return nil
}

// Close stops the heartbeat and, when remove is not nil (the attempt
// deleted everything it wrote and did not commit), deletes the record
// through it (the table's deletion gate, as a record); otherwise the record
// stays for the sweep of dead records to finish the cleanup. It ignores
// ctx's cancellation, as Clean does. Close is called once.
func (j *Journal) Close(ctx context.Context, remove Deleter) error {
	close(j.stop)
	<-j.done
	if remove == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanTimeout)
	defer cancel()
	if err := remove.Delete(ctx, j.key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return fmt.Errorf("delete intent record %s: %w", j.key, err)
	}
	return nil
}

// Finish ends the attempt's record after its Clean: it logs a key the
// record may have missed, and closes the journal, deleting the record
// through remove when the clean succeeded (remove not nil) and keeping it
// otherwise, for the sweep of dead records to retry once it is stale.
func (j *Journal) Finish(ctx context.Context, remove Deleter, log hclog.Logger, table string) {
	if err := j.Err(); err != nil {
		log.Warn("the intent record may miss a key", "table", table, "record", j.key, "error", err)
	}
	if err := j.Close(ctx, remove); err != nil {
		log.Warn("delete the intent record", "table", table, "error", err)
	}
}

// ParseRecord decodes an intent record read from key.
func ParseRecord(key string, data []byte) (*Record, error) {
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("decode intent record %s: %w", key, err)
	}
	if r.Format != recordFormat {
		return nil, fmt.Errorf("intent record %s: format %d, want %d", key, r.Format, recordFormat)
	}
	return &r, nil
}

// tempLeftover matches the temp files a killed write leaves behind:
// gocloud's fileblob uploads to "NAME.<hex nanos>.tmp" beside the target,
// the local log store and lease write ".NAME.<digits>.tmp" before they
// link or rename it into place, and Hadoop-based log stores write
// ".N.json.<uuid>.tmp".
var tempLeftover = regexp.MustCompile(`^.+\.[0-9A-Za-z_-]{1,64}\.tmp$`)

// IsTempLeftover reports whether the base name of key is the temp file of
// an interrupted write (NAME.<random>.tmp).
func IsTempLeftover(key string) bool {
	return tempLeftover.MatchString(path.Base(key))
}
