package events

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"gocloud.dev/pubsub"
)

// PollFunc asks for a poll of the named table and returns once it is done
// (the scheduler's PollNow). A nil error acknowledges the message: return
// nil too for a table that is gone or halted (the hint has nothing to
// do); an error leaves the message to be delivered again.
type PollFunc func(ctx context.Context, table string) error

// OpenFunc opens the subscription (Open, or a test's own) and returns it
// with the func that releases what was opened beside it (called after the
// subscription's Shutdown).
type OpenFunc func(ctx context.Context) (*pubsub.Subscription, func() error, error)

// Options configure a Consumer. Zero fields take the documented defaults.
type Options struct {
	// Handlers is how many messages are handled at once (default 64): a
	// message waits for its poll, which waits while the table runs, so
	// messages of a table with a long run hold a handler each while the
	// others go on.
	Handlers int
	// RetryBase and RetryMax bound the wait before the subscription is
	// opened again after it failed (defaults 1s, 1m).
	RetryBase, RetryMax time.Duration
	// Logger receives the consumer's logs (default a null logger).
	Logger hclog.Logger
}

// Stats counts what the consumer did with the notifications it received;
// /status and /metrics show them.
type Stats struct {
	// Received counts the messages received.
	Received int64 `json:"received"`
	// Polled counts the polls asked for: one per table per message naming
	// a new commit of the table's log.
	Polled int64 `json:"polled"`
	// Outside counts the objects named that lie outside every watched
	// table: dropped.
	Outside int64 `json:"outside"`
	// Ignored counts the objects inside a watched table that are no new
	// commit (data files, checkpoints, removals), and the stores' test
	// messages.
	Ignored int64 `json:"ignored"`
	// Malformed counts the messages in no known format (acknowledged and
	// dropped: delivering them again would not help).
	Malformed int64 `json:"malformed"`
	// PollErrors counts the polls that failed; the message is delivered
	// again.
	PollErrors int64 `json:"poll_errors"`
	// SubscriptionErrors counts failures to open or receive from the
	// subscription; it is opened again with backoff.
	SubscriptionErrors int64 `json:"subscription_errors"`
	// Tables is how many watched tables events can map to (s3, gs and
	// azblob URLs).
	Tables int `json:"tables"`
}

// Consumer receives notifications from a subscription, maps them onto the
// watched tables and asks for a poll of each table with a new commit.
type Consumer struct {
	open OpenFunc
	poll PollFunc
	opts Options
	log  hclog.Logger

	index atomic.Pointer[Index]

	received, polled, outside, ignored, malformed, pollErrors, subErrors atomic.Int64
}

// NewConsumer returns a consumer that polls through poll; it watches no
// table until SetTables.
func NewConsumer(open OpenFunc, poll PollFunc, opts Options) *Consumer {
	if opts.Handlers <= 0 {
		opts.Handlers = 64
	}
	if opts.RetryBase <= 0 {
		opts.RetryBase = time.Second
	}
	if opts.RetryMax < opts.RetryBase {
		opts.RetryMax = time.Minute
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	c := &Consumer{open: open, poll: poll, opts: opts, log: opts.Logger}
	empty, _ := NewIndex(nil)
	c.index.Store(empty)
	return c
}

// SetTables replaces the watched tables (at start and on every reload).
func (c *Consumer) SetTables(ts []Table) error {
	ix, err := NewIndex(ts)
	if err != nil {
		return err
	}
	c.index.Store(ix)
	return nil
}

// Stats returns the counters so far.
func (c *Consumer) Stats() Stats {
	return Stats{
		Received: c.received.Load(), Polled: c.polled.Load(), Outside: c.outside.Load(),
		Ignored: c.ignored.Load(), Malformed: c.malformed.Load(), PollErrors: c.pollErrors.Load(),
		SubscriptionErrors: c.subErrors.Load(), Tables: c.index.Load().Len(),
	}
}

// Run receives until ctx ends, opening the subscription again with backoff
// when it fails. Messages being handled when ctx ends are left
// unacknowledged (the broker delivers them again).
func (c *Consumer) Run(ctx context.Context) {
	failures := 0
	for ctx.Err() == nil {
		before := c.received.Load()
		err := c.runOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		c.subErrors.Add(1)
		if c.received.Load() > before {
			failures = 0 // it worked for a while: start the backoff again
		}
		failures++
		wait := backoff(failures, c.opts.RetryBase, c.opts.RetryMax)
		c.log.Warn("event subscription failed; opening it again", "error", err, "retry_in", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// runOnce opens the subscription and handles messages until a receive
// fails or ctx ends.
func (c *Consumer) runOnce(ctx context.Context) error {
	sub, release, err := c.open(ctx)
	if err != nil {
		return fmt.Errorf("open subscription: %w", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := sub.Shutdown(sctx); err != nil && ctx.Err() == nil {
			c.log.Debug("closing the event subscription", "error", err)
		}
		if release != nil {
			if err := release(); err != nil {
				c.log.Debug("closing the event subscription's connection", "error", err)
			}
		}
	}()
	var (
		wg    sync.WaitGroup
		first error
		once  sync.Once
	)
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	for range c.opts.Handlers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				msg, err := sub.Receive(rctx)
				if err != nil {
					once.Do(func() { first = err })
					stop()
					return
				}
				c.handle(rctx, msg)
			}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("receive: %w", first)
}

// handle decodes one message, polls the tables it names a new commit of,
// and acknowledges it once those polls are done.
func (c *Consumer) handle(ctx context.Context, msg *pubsub.Message) {
	c.received.Add(1)
	m, err := Decode(msg.Body, msg.Metadata)
	if err != nil {
		c.malformed.Add(1)
		c.log.Warn("event in no known format dropped", "error", err, "bytes", len(msg.Body), "id", msg.LoggableID)
		msg.Ack()
		return
	}
	if m.Test {
		c.ignored.Add(1)
	}
	ix := c.index.Load()
	tables := map[string]bool{}
	for _, o := range m.Objects {
		match := ix.Lookup(o)
		switch {
		case match.Table == "":
			c.outside.Add(1)
		case o.Kind != KindCreated || !match.Commit:
			c.ignored.Add(1)
		default:
			tables[match.Table] = true
		}
	}
	names := make([]string, 0, len(tables))
	for n := range tables {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		c.polled.Add(1)
		if err := c.poll(ctx, name); err != nil {
			c.pollErrors.Add(1)
			if !errors.Is(err, context.Canceled) {
				c.log.Warn("poll asked for by an event failed; the message comes again", "table", name, "error", err)
			}
			if msg.Nackable() {
				msg.Nack()
			}
			return
		}
	}
	msg.Ack()
}

// backoff is base*2^(n-1) capped at max, with equal jitter.
func backoff(n int, base, max time.Duration) time.Duration {
	d := base
	for i := 1; i < n && d < max; i++ {
		d *= 2
	}
	d = min(d, max)
	return d/2 + time.Duration(rand.Float64()*float64(d/2))
}
