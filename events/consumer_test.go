package events

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"gocloud.dev/pubsub"
	"gocloud.dev/pubsub/mempubsub"

	"github.com/compactord/compactord/internal/testutil"
)

// polls is a PollFunc fake: it records the tables polled and fails the
// first failFirst polls.
type polls struct {
	mu        sync.Mutex
	tables    []string
	failFirst int
}

func (p *polls) poll(ctx context.Context, table string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tables = append(p.tables, table)
	if len(p.tables) <= p.failFirst {
		return errors.New("scheduler busy")
	}
	return nil
}

func (p *polls) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.tables)
}

func startConsumer(t *testing.T, p *polls, tables []Table) (*pubsub.Topic, *Consumer) {
	t.Helper()
	topic := mempubsub.NewTopic()
	sub := mempubsub.NewSubscription(topic, time.Minute)
	opened := false
	c := NewConsumer(func(ctx context.Context) (*pubsub.Subscription, func() error, error) {
		if opened {
			return nil, nil, errors.New("opened twice")
		}
		opened = true
		return sub, nil, nil
	}, p.poll, Options{Handlers: 2})
	if err := c.SetTables(tables); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		_ = topic.Shutdown(context.Background())
	})
	return topic, c
}

func send(t *testing.T, topic *pubsub.Topic, body string, attrs map[string]string) {
	t.Helper()
	if err := topic.Send(context.Background(), &pubsub.Message{Body: []byte(body), Metadata: attrs}); err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.WaitFor(t, 10*time.Second, 2*time.Millisecond, what, cond)
}

const s3Commit = `{"Records":[{"eventVersion":"2.2","eventSource":"aws:s3","eventName":"s3:ObjectCreated:Put","s3":{"bucket":{"name":"lake"},"object":{"key":"t1/_delta_log/00000000000000000001.json"}}},{"eventVersion":"2.2","eventSource":"aws:s3","eventName":"s3:ObjectCreated:Put","s3":{"bucket":{"name":"lake"},"object":{"key":"t1/_delta_log/00000000000000000002.json"}}}]}`

func TestACommitEventPollsItsTableOnceAndEverythingElseIsCounted(t *testing.T) {
	p := &polls{}
	topic, c := startConsumer(t, p, []Table{{"t1", "s3://lake/t1"}, {"t2", "s3://lake/t2"}})
	send(t, topic, `{"Service":"S3","Event":"s3:TestEvent","Bucket":"Test-Bucket"}`, nil)
	send(t, topic, s3Commit, nil) // two commits of t1 in one message: one poll
	send(t, topic, `{"Records":[{"eventName":"ObjectCreated:Put","s3":{"bucket":{"name":"lake"},"object":{"key":"t2/part-0.parquet"}}}]}`, nil)
	send(t, topic, `{"Records":[{"eventName":"ObjectCreated:Put","s3":{"bucket":{"name":"lake"},"object":{"key":"t3/_delta_log/00000000000000000001.json"}}}]}`, nil)
	send(t, topic, `{"Records":[{"eventName":"ObjectRemoved:Delete","s3":{"bucket":{"name":"lake"},"object":{"key":"t2/_delta_log/00000000000000000001.json"}}}]}`, nil)
	send(t, topic, `not json`, nil)
	waitFor(t, "every message handled", func() bool { return c.Stats().Received == 6 })
	waitFor(t, "the poll", func() bool { return p.count() == 1 })
	want := Stats{Received: 6, Polled: 1, Outside: 1, Ignored: 3, Malformed: 1, Tables: 2}
	if got := c.Stats(); got != want {
		t.Fatalf("stats = %+v\nwant    %+v", got, want)
	}
	if p.tables[0] != "t1" {
		t.Fatalf("polled %v", p.tables)
	}
}

func TestAMessageWhosePollFailsIsDeliveredAgainAndAckedAfterThePoll(t *testing.T) {
	p := &polls{failFirst: 2}
	topic, c := startConsumer(t, p, []Table{{"t1", "s3://lake/t1"}})
	send(t, topic, s3Commit, nil)
	waitFor(t, "a successful poll", func() bool { return p.count() == 3 })
	waitFor(t, "stats", func() bool { return c.Stats().Received == 3 })
	// Acked after the third poll: nothing comes again.
	time.Sleep(50 * time.Millisecond)
	if got := c.Stats(); got.Received != 3 || got.PollErrors != 2 || p.count() != 3 {
		t.Fatalf("stats = %+v, polls = %d; want 3 deliveries, 2 failed polls, 3 polls", got, p.count())
	}
}

func TestReloadedTablesTakeEffectForTheNextMessage(t *testing.T) {
	p := &polls{}
	topic, c := startConsumer(t, p, nil)
	send(t, topic, s3Commit, nil)
	waitFor(t, "first", func() bool { return c.Stats().Received == 1 })
	if err := c.SetTables([]Table{{"t1", "s3://lake/t1"}}); err != nil {
		t.Fatal(err)
	}
	send(t, topic, s3Commit, nil)
	waitFor(t, "poll", func() bool { return p.count() == 1 })
	if got := c.Stats(); got.Outside != 2 || got.Polled != 1 {
		t.Fatalf("stats = %+v", got)
	}
}

func TestASubscriptionThatFailsToOpenIsOpenedAgain(t *testing.T) {
	p := &polls{}
	topic := mempubsub.NewTopic()
	sub := mempubsub.NewSubscription(topic, time.Minute)
	t.Cleanup(func() { _ = topic.Shutdown(context.Background()) })
	opens := 0
	c := NewConsumer(func(ctx context.Context) (*pubsub.Subscription, func() error, error) {
		opens++
		if opens == 1 {
			return nil, nil, errors.New("broker not up yet")
		}
		return sub, nil, nil
	}, p.poll, Options{Handlers: 1, RetryBase: time.Millisecond, RetryMax: 5 * time.Millisecond})
	if err := c.SetTables([]Table{{"t1", "s3://lake/t1"}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	send(t, topic, s3Commit, nil)
	waitFor(t, "the poll", func() bool { return p.count() == 1 })
	if st := c.Stats(); st.SubscriptionErrors != 1 {
		t.Fatalf("stats = %+v, want one subscription error", st)
	}
}
