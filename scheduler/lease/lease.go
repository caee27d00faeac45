package lease

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/compactord/compactord/objstore"
)

// Key is the lease object's key under the table root.
const Key = "_compactord/lease"

// ErrLost is returned by Renew when another replica took the lease (or it
// is gone): the caller must stop writing to the table.
var ErrLost = errors.New("lease lost")

// Record is the lease object's body.
type Record struct {
	// Holder names the replica (host, pod) for operators.
	Holder string `json:"holder"`
	// Nonce is fresh on every write, so every write has its own version
	// and a replica recognises its own lease after a restart of the holder
	// name elsewhere.
	Nonce string `json:"nonce"`
	// Expires is when other replicas may take the lease over.
	Expires time.Time `json:"expires"`
}

// Options configure a Lease. The zero value is usable.
type Options struct {
	// TTL is how long an acquisition or renewal holds (default 60s).
	TTL time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Lease is one replica's handle on one table's lease. It is not safe for
// concurrent use; give each goroutine its own.
type Lease struct {
	store  objstore.ConditionalStore
	table  string
	holder string
	ttl    time.Duration
	now    func() time.Time

	token string // version of our last write; "" when not held
	rec   Record
}

// New returns a handle for holder on the lease of the table at url, kept in
// the table's control-object store cs (delta's Table.Conditional gives it).
func New(cs objstore.ConditionalStore, url, holder string, opts Options) (*Lease, error) {
	if holder == "" {
		return nil, fmt.Errorf("lease on %s: empty holder name", url)
	}
	if opts.TTL <= 0 {
		opts.TTL = 60 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Lease{store: cs, table: url, holder: holder, ttl: opts.TTL, now: opts.Now}, nil
}

// Acquire makes one attempt to take the lease: it creates the object if
// absent, takes it over if expired, or renews it if this handle holds it.
// It reports whether the handle holds the lease afterwards. Losing a race
// is (false, nil); errors are I/O failures (an ambiguous write is reported
// as not held: the next attempt re-reads).
func (l *Lease) Acquire(ctx context.Context) (bool, error) {
	data, token, err := l.store.ReadVersioned(ctx, Key)
	switch {
	case errors.Is(err, objstore.ErrObjectNotFound):
		return l.write(ctx, "")
	case err != nil:
		return false, fmt.Errorf("lease on %s: %w", l.table, err)
	}
	var cur Record
	if err := json.Unmarshal(data, &cur); err != nil {
		return false, fmt.Errorf("lease on %s: corrupt %s: %w", l.table, Key, err)
	}
	mine := l.token != "" && token == l.token
	if !mine && l.now().Before(cur.Expires) {
		return false, nil
	}
	return l.write(ctx, token)
}

// Renew extends a held lease. It returns an error wrapping ErrLost when the
// lease changed hands since this handle's last write.
func (l *Lease) Renew(ctx context.Context) error {
	if l.token == "" {
		return fmt.Errorf("lease on %s: %w: not held", l.table, ErrLost)
	}
	ok, err := l.write(ctx, l.token)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("lease on %s: %w", l.table, ErrLost)
	}
	return nil
}

// Release gives the lease up by writing an already-expired record, so the
// next Acquire anywhere succeeds at once. Releasing a lease that is not
// held is a no-op.
func (l *Lease) Release(ctx context.Context) error {
	if l.token == "" {
		return nil
	}
	rec := Record{Holder: l.holder, Nonce: newNonce(), Expires: l.now().Add(-time.Second).UTC()}
	body, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	token := l.token
	l.token = ""
	if err := l.store.ReplaceIfMatch(ctx, Key, body, token); err != nil && !errors.Is(err, objstore.ErrPreconditionFailed) {
		return fmt.Errorf("lease on %s: release: %w", l.table, err)
	}
	return nil
}

// Held reports whether this handle's last write made it the holder and
// that write has not yet expired by the local clock.
func (l *Lease) Held() bool {
	return l.token != "" && l.now().Before(l.rec.Expires)
}

// Record returns the body of this handle's last successful write.
func (l *Lease) Record() Record { return l.rec }

// write creates (prev == "") or compare-and-swaps (prev = version read) a
// fresh record naming this handle.
func (l *Lease) write(ctx context.Context, prev string) (bool, error) {
	rec := Record{Holder: l.holder, Nonce: newNonce(), Expires: l.now().Add(l.ttl).UTC()}
	body, err := json.Marshal(rec)
	if err != nil {
		return false, err
	}
	if prev == "" {
		err = l.store.CreateIfAbsent(ctx, Key, body)
	} else {
		err = l.store.ReplaceIfMatch(ctx, Key, body, prev)
	}
	switch {
	case err == nil:
	case errors.Is(err, objstore.ErrPreconditionFailed), errors.Is(err, objstore.ErrAmbiguous):
		l.token = ""
		return false, nil
	default:
		return false, fmt.Errorf("lease on %s: %w", l.table, err)
	}
	// Learn the version token of what we wrote (ETag, generation).
	data, token, err := l.store.ReadVersioned(ctx, Key)
	if err != nil {
		l.token = ""
		return false, fmt.Errorf("lease on %s: read back: %w", l.table, err)
	}
	var got Record
	if err := json.Unmarshal(data, &got); err != nil || got.Nonce != rec.Nonce {
		// Someone replaced it between our write and the read: not ours.
		l.token = ""
		return false, nil
	}
	l.token, l.rec = token, rec
	return true, nil
}

func newNonce() string { return rand.Text() }
