package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Store names the kind of object store an event came from; it picks the
// URL scheme of the tables the event may belong to.
type Store string

// The stores whose events Decode reads.
const (
	StoreS3    Store = "s3"
	StoreGCS   Store = "gs"
	StoreAzure Store = "azblob"
)

// Kind is what happened to an object, as far as the poll cares.
type Kind int

// Event kinds.
const (
	// KindOther is any event that does not make an object appear
	// (removals, metadata updates, restores).
	KindOther Kind = iota
	// KindCreated is an object written or overwritten.
	KindCreated
)

// Object is one object an event names.
type Object struct {
	Store Store
	// Bucket is the S3 or GCS bucket, or the Azure container.
	Bucket string
	// Key is the object key, decoded (an S3 event's URL encoding undone).
	Key  string
	Kind Kind
}

// Message is what Decode found in one notification.
type Message struct {
	// Objects are the objects the notification names (none for a test or
	// validation message).
	Objects []Object
	// Test is set for a store's configuration test message (S3's
	// s3:TestEvent, Event Grid's subscription validation).
	Test bool
}

// ErrUnknownFormat is wrapped by Decode for a notification in none of the
// formats it reads.
var ErrUnknownFormat = errors.New("not an S3, SNS, GCS or Azure Event Grid notification")

// Bounds on what one notification may hold (the stores send one record per
// message; SNS caps messages at 256 KiB).
const (
	maxBody    = 1 << 20
	maxObjects = 1000
)

// Decode reads one notification: body is the message body and attrs its
// attributes (GCS puts the object in them). The format is recognised from
// the content, not from where the message came from.
func Decode(body []byte, attrs map[string]string) (Message, error) {
	if len(body) > maxBody {
		return Message{}, fmt.Errorf("notification of %d bytes (limit %d): %w", len(body), maxBody, ErrUnknownFormat)
	}
	if attrs["bucketId"] != "" && attrs["objectId"] != "" {
		return decodeGCSAttributes(attrs), nil
	}
	return decodeBody(body, 0)
}

// envelope holds the top-level fields of every JSON format read here.
type envelope struct {
	// S3 and S3 test events.
	Records json.RawMessage `json:"Records"`
	Event   string          `json:"Event"`
	// SNS.
	Type    string `json:"Type"`
	Message string `json:"Message"`
	// Event Grid (eventType) and CloudEvents (type, specversion).
	EventType   string `json:"eventType"`
	SpecVersion string `json:"specversion"`
	Subject     string `json:"subject"`
	// A GCS object resource (JSON_API_V1 payload) without attributes.
	ObjectKind string `json:"kind"`
	Bucket     string `json:"bucket"`
	Name       string `json:"name"`
}

func decodeBody(body []byte, depth int) (Message, error) {
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		return decodeEventGridArray(body)
	}
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil {
		return Message{}, fmt.Errorf("%w: %w", ErrUnknownFormat, err)
	}
	switch {
	case env.Type == "Notification" && env.Message != "" && depth == 0:
		m, err := decodeBody([]byte(env.Message), depth+1)
		if err != nil {
			return Message{}, fmt.Errorf("SNS message: %w", err)
		}
		return m, nil
	case env.Type == "SubscriptionConfirmation" || env.Type == "UnsubscribeConfirmation":
		return Message{Test: true}, nil
	case env.Event == "s3:TestEvent":
		return Message{Test: true}, nil
	case len(env.Records) > 0:
		return decodeS3Records(env.Records)
	case env.EventType != "" || env.SpecVersion != "":
		return decodeEventGrid(env)
	case env.ObjectKind == "storage#object" && env.Bucket != "" && env.Name != "":
		return Message{Objects: []Object{{Store: StoreGCS, Bucket: env.Bucket, Key: env.Name, Kind: KindCreated}}}, nil
	}
	return Message{}, ErrUnknownFormat
}

type s3Record struct {
	EventSource string `json:"eventSource"`
	EventName   string `json:"eventName"`
	S3          struct {
		Bucket struct {
			Name string `json:"name"`
		} `json:"bucket"`
		Object struct {
			Key string `json:"key"`
		} `json:"object"`
	} `json:"s3"`
}

// decodeS3Records reads the Records of an S3 event notification (v2.x).
// S3 URL-encodes the key as a form value ("a b" is "a+b").
func decodeS3Records(raw json.RawMessage) (Message, error) {
	var recs []s3Record
	if err := json.Unmarshal(raw, &recs); err != nil {
		return Message{}, fmt.Errorf("S3 event records: %w", err)
	}
	if len(recs) > maxObjects {
		return Message{}, fmt.Errorf("S3 event with %d records (limit %d): %w", len(recs), maxObjects, ErrUnknownFormat)
	}
	var m Message
	for i, r := range recs {
		if r.S3.Bucket.Name == "" || r.S3.Object.Key == "" {
			return Message{}, fmt.Errorf("S3 event record %d: no bucket or key: %w", i, ErrUnknownFormat)
		}
		key, err := url.QueryUnescape(r.S3.Object.Key)
		if err != nil {
			return Message{}, fmt.Errorf("S3 event record %d: key: %w", i, err)
		}
		kind := KindOther
		if strings.HasPrefix(strings.TrimPrefix(r.EventName, "s3:"), "ObjectCreated:") {
			kind = KindCreated
		}
		m.Objects = append(m.Objects, Object{Store: StoreS3, Bucket: r.S3.Bucket.Name, Key: key, Kind: kind})
	}
	return m, nil
}

// decodeGCSAttributes reads a GCS Pub/Sub notification from its
// attributes (the payload, when there is one, says the same).
func decodeGCSAttributes(attrs map[string]string) Message {
	kind := KindOther
	if attrs["eventType"] == "OBJECT_FINALIZE" {
		kind = KindCreated
	}
	return Message{Objects: []Object{{Store: StoreGCS, Bucket: attrs["bucketId"], Key: attrs["objectId"], Kind: kind}}}
}

func decodeEventGridArray(body []byte) (Message, error) {
	var evs []envelope
	if err := json.Unmarshal(body, &evs); err != nil {
		return Message{}, fmt.Errorf("%w: %w", ErrUnknownFormat, err)
	}
	if len(evs) > maxObjects {
		return Message{}, fmt.Errorf("Event Grid batch of %d events (limit %d): %w", len(evs), maxObjects, ErrUnknownFormat)
	}
	var m Message
	for i, ev := range evs {
		if ev.EventType == "" && ev.SpecVersion == "" {
			return Message{}, fmt.Errorf("Event Grid batch, event %d: %w", i, ErrUnknownFormat)
		}
		one, err := decodeEventGrid(ev)
		if err != nil {
			return Message{}, fmt.Errorf("Event Grid batch, event %d: %w", i, err)
		}
		m.Objects = append(m.Objects, one.Objects...)
		m.Test = m.Test || one.Test
	}
	return m, nil
}

// decodeEventGrid reads one Azure Storage event in the Event Grid schema
// (eventType) or the CloudEvents 1.0 schema (type, which encoding/json
// matches to the envelope's Type). The subject names the container and
// blob: /blobServices/default/containers/C/blobs/PATH, the path as written
// (not URL-encoded).
func decodeEventGrid(env envelope) (Message, error) {
	typ := env.EventType
	if typ == "" {
		typ = env.Type
	}
	switch {
	case typ == "Microsoft.EventGrid.SubscriptionValidationEvent":
		return Message{Test: true}, nil
	case !strings.HasPrefix(typ, "Microsoft.Storage."):
		return Message{}, fmt.Errorf("Event Grid event of type %q: %w", typ, ErrUnknownFormat)
	}
	rest, ok := strings.CutPrefix(env.Subject, "/blobServices/default/containers/")
	if !ok {
		return Message{}, fmt.Errorf("Event Grid %s: subject %q names no blob: %w", typ, env.Subject, ErrUnknownFormat)
	}
	container, blob, ok := strings.Cut(rest, "/blobs/")
	if !ok || container == "" || blob == "" {
		return Message{}, fmt.Errorf("Event Grid %s: subject %q names no blob: %w", typ, env.Subject, ErrUnknownFormat)
	}
	kind := KindOther
	if typ == "Microsoft.Storage.BlobCreated" {
		kind = KindCreated
	}
	return Message{Objects: []Object{{Store: StoreAzure, Bucket: container, Key: blob, Kind: kind}}}, nil
}
