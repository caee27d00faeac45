package events

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"

	amqp "github.com/rabbitmq/amqp091-go"
	"gocloud.dev/pubsub"
	// The subscription drivers an events url may name.
	_ "gocloud.dev/pubsub/awssnssqs"
	_ "gocloud.dev/pubsub/azuresb"
	_ "gocloud.dev/pubsub/gcppubsub"
	_ "gocloud.dev/pubsub/mempubsub"
	"gocloud.dev/pubsub/rabbitpubsub"

	"github.com/compactord/compactord/internal/redact"
)

// Schemes are the subscription URL schemes Open accepts: SQS (awssqs),
// Google Pub/Sub (gcppubsub), Azure Service Bus (azuresb), RabbitMQ
// (rabbit) and the in-process mem (tests).
var Schemes = []string{"awssqs", "gcppubsub", "azuresb", "rabbit", "mem"}

// CheckURL reports whether u is a subscription URL of a scheme Open
// accepts (the policies' validation).
func CheckURL(u string) error {
	pu, err := url.Parse(u)
	if err != nil {
		return fmt.Errorf("events url %s: %w", redact.URL(u), err)
	}
	for _, s := range Schemes {
		if pu.Scheme == s {
			return nil
		}
	}
	return fmt.Errorf("events url %s: scheme %q is not one of %s", redact.URL(u), pu.Scheme, strings.Join(Schemes, ", "))
}

// Open opens the subscription at u through gocloud.dev/pubsub (the
// driver's own settings come from its environment: RABBIT_SERVER_URL,
// SERVICEBUS_CONNECTION_STRING, the AWS and Google credentials). The
// returned func releases what was opened beside the subscription (call it
// after the subscription's Shutdown).
//
// rabbit:// gets a connection of its own rather than the driver's
// process-wide one: closing it is what returns the messages a stopped
// subscription had prefetched to the queue (the driver's Close leaves its
// consumer on a shared connection, where it keeps taking messages), and a
// subscription opened again after a failure starts on a fresh connection.
func Open(ctx context.Context, u string) (*pubsub.Subscription, func() error, error) {
	if err := CheckURL(u); err != nil {
		return nil, nil, err
	}
	pu, _ := url.Parse(u)
	if pu.Scheme == "rabbit" {
		return openRabbit(pu)
	}
	sub, err := pubsub.OpenSubscription(ctx, u)
	if err != nil {
		return nil, nil, fmt.Errorf("events url %s: %w", redact.URL(u), redact.Error(err))
	}
	return sub, func() error { return nil }, nil
}

// defaultPrefetch bounds the messages RabbitMQ hands the consumer before
// it acknowledges any.
const defaultPrefetch = 64

// openRabbit opens rabbit://QUEUE[?prefetch_count=N] on a connection of its
// own to RABBIT_SERVER_URL.
func openRabbit(u *url.URL) (*pubsub.Subscription, func() error, error) {
	queue := path.Join(u.Host, u.Path)
	prefetch := defaultPrefetch
	for k, v := range u.Query() {
		if k != "prefetch_count" || len(v) != 1 {
			return nil, nil, fmt.Errorf("events url %s: unknown or repeated parameter %q (want prefetch_count)", redact.URL(u.String()), k)
		}
		n, err := strconv.Atoi(v[0])
		if err != nil || n < 1 {
			return nil, nil, fmt.Errorf("events url %s: prefetch_count %q: want a positive number", redact.URL(u.String()), v[0])
		}
		prefetch = n
	}
	server := os.Getenv("RABBIT_SERVER_URL")
	if server == "" {
		return nil, nil, fmt.Errorf("events url %s: RABBIT_SERVER_URL is not set (amqp://user:password@host:5672/)", redact.URL(u.String()))
	}
	conn, err := amqp.Dial(server)
	if err != nil {
		return nil, nil, fmt.Errorf("events url %s: connect to %s: %w", redact.URL(u.String()), redact.URL(server), redact.Error(err))
	}
	sub := rabbitpubsub.OpenSubscription(conn, queue, &rabbitpubsub.SubscriptionOptions{PrefetchCount: &prefetch})
	return sub, conn.Close, nil
}
