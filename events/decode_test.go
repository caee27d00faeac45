package events

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// recorded reads a testdata payload: the message body, and for GCS
// notifications ({"attributes": ..., "data": ...}) the attributes and the
// payload as the body.
func recorded(t *testing.T, name string) ([]byte, map[string]string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var gcs struct {
		Attributes map[string]string `json:"attributes"`
		Data       json.RawMessage   `json:"data"`
	}
	if json.Unmarshal(b, &gcs) == nil && gcs.Attributes != nil {
		return gcs.Data, gcs.Attributes
	}
	return b, nil
}

func TestDecodeReadsEachStoresRecordedNotifications(t *testing.T) {
	for _, tc := range []struct {
		file string
		want Message
	}{
		{"s3-put.json", Message{Objects: []Object{{StoreS3, "lake", "sales/orders 2026/_delta_log/00000000000000000007.json", KindCreated}}}},
		{"s3-delete.json", Message{Objects: []Object{{StoreS3, "lake", "sales/orders 2026/_delta_log/00000000000000000001.json", KindOther}}}},
		{"s3-sns.json", Message{Objects: []Object{{StoreS3, "lake", "sales/orders 2026/_delta_log/00000000000000000007.json", KindCreated}}}},
		{"versitygw-testevent.json", Message{Test: true}},
		// Recorded from versitygw v1.8.0 through RabbitMQ (the end-to-end
		// test's COMPACTORD_TEST_EVENTS_RECORD).
		{"versitygw-put.json", Message{Objects: []Object{{StoreS3, "events", "lake/hot/_delta_log/00000000000000000000.json", KindCreated}}}},
		{"versitygw-delete.json", Message{Objects: []Object{{StoreS3, "events", "lake/hot/_compactord/probe-d6ac45fcbe869d1d", KindOther}}}},
		{"gcs-finalize.json", Message{Objects: []Object{{StoreGCS, "lake", "warehouse/events/_delta_log/00000000000000000042.json", KindCreated}}}},
		{"gcs-delete.json", Message{Objects: []Object{{StoreGCS, "lake", "warehouse/events/_delta_log/00000000000000000001.json", KindOther}}}},
		{"azure-eventgrid.json", Message{Objects: []Object{{StoreAzure, "lake", "gold/customers/_delta_log/00000000000000000012.json", KindCreated}}}},
		{"azure-cloudevent.json", Message{Objects: []Object{{StoreAzure, "lake", "gold/customers/_delta_log/00000000000000000013.json", KindCreated}}}},
		{"azure-validation.json", Message{Test: true}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			body, attrs := recorded(t, tc.file)
			got, err := Decode(body, attrs)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Decode = %+v\nwant     %+v", got, tc.want)
			}
		})
	}
}

func TestAGCSPayloadWithoutAttributesStillNamesTheObject(t *testing.T) {
	body, _ := recorded(t, "gcs-finalize.json")
	got, err := Decode(body, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []Object{{StoreGCS, "lake", "warehouse/events/_delta_log/00000000000000000042.json", KindCreated}}
	if !reflect.DeepEqual(got.Objects, want) {
		t.Fatalf("objects = %+v", got.Objects)
	}
}

func TestDecodeRefusesWhatIsNoNotification(t *testing.T) {
	for name, body := range map[string]string{
		"not json":             "hello",
		"other json":           `{"hello":"world"}`,
		"record without key":   `{"Records":[{"eventName":"ObjectCreated:Put","s3":{"bucket":{"name":"b"},"object":{}}}]}`,
		"bad key encoding":     `{"Records":[{"eventName":"ObjectCreated:Put","s3":{"bucket":{"name":"b"},"object":{"key":"a%zz"}}}]}`,
		"other Event Grid":     `{"eventType":"Microsoft.Resources.ResourceWriteSuccess","subject":"/subscriptions/x"}`,
		"blob subject missing": `{"eventType":"Microsoft.Storage.BlobCreated","subject":"/blobServices/default/containers/c"}`,
		"SNS of junk":          `{"Type":"Notification","Message":"junk"}`,
		"SNS in SNS":           `{"Type":"Notification","Message":"{\"Type\":\"Notification\",\"Message\":\"{}\"}"}`,
	} {
		t.Run(name, func(t *testing.T) {
			if m, err := Decode([]byte(body), nil); err == nil {
				t.Fatalf("Decode = %+v, want an error", m)
			} else if name != "bad key encoding" && !errors.Is(err, ErrUnknownFormat) {
				t.Fatalf("error %v does not wrap ErrUnknownFormat", err)
			}
		})
	}
}
