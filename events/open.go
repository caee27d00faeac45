package events

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"gocloud.dev/pubsub"
	// The subscription drivers an events url may name.
	_ "gocloud.dev/pubsub/awssnssqs"
	_ "gocloud.dev/pubsub/azuresb"
	_ "gocloud.dev/pubsub/gcppubsub"
	_ "gocloud.dev/pubsub/mempubsub"
	_ "gocloud.dev/pubsub/rabbitpubsub"

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
// SERVICEBUS_CONNECTION_STRING, the AWS and Google credentials).
func Open(ctx context.Context, u string) (*pubsub.Subscription, error) {
	if err := CheckURL(u); err != nil {
		return nil, err
	}
	sub, err := pubsub.OpenSubscription(ctx, u)
	if err != nil {
		return nil, fmt.Errorf("events url %s: %w", redact.URL(u), redact.Error(err))
	}
	return sub, nil
}
