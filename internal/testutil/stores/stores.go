package stores

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"cloud.google.com/go/storage"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"gocloud.dev/blob"
	"google.golang.org/api/googleapi"

	// Drivers for the buckets the helpers open directly.
	_ "gocloud.dev/blob/azureblob"
	_ "gocloud.dev/blob/gcsblob"
	_ "gocloud.dev/blob/s3blob"
)

// Bucket is the bucket (S3, GCS) or container (Azure) the suite creates on
// each emulator; every table lives under its own random prefix.
const Bucket = "compactord-test"

// Env vars exported by scripts/test.d/emulators.sh.
const (
	EnvS3    = "COMPACTORD_TEST_S3_ENDPOINT"
	EnvGCS   = "COMPACTORD_TEST_GCS_ENDPOINT"
	EnvAzure = "COMPACTORD_TEST_AZURE_ENDPOINT"
)

// Store is one object store the suite runs on.
type Store struct {
	// Name is the subtest name ("mem", "file", "s3", "s3-dynamodb",
	// "gcs", "azure").
	Name string
	// NewTable returns the URL of a fresh, empty table location, or skips
	// (fails under CI=true) when the store's server is not configured.
	NewTable func(t *testing.T) string
}

// Stores returns every store the suite supports.
func Stores() []Store {
	return []Store{
		{Name: "mem", NewTable: func(t *testing.T) string { return "mem://" + TableName(t) }},
		{Name: "file", NewTable: func(t *testing.T) string { return "file://" + filepath.ToSlash(t.TempDir()) + "/table" }},
		{Name: "s3", NewTable: S3Table},
		{Name: "s3-dynamodb", NewTable: S3DynamoTable},
		{Name: "gcs", NewTable: GCSTable},
		{Name: "azure", NewTable: AzureTable},
	}
}

// ForEachStore runs fn as a subtest per store.
func ForEachStore(t *testing.T, fn func(t *testing.T, newTable func(t *testing.T) string)) {
	for _, st := range Stores() {
		t.Run(st.Name, func(t *testing.T) { fn(t, st.NewTable) })
	}
}

// RequireEnv returns the env var's value, or skips the test (fails it when
// CI=true: CI must exercise every store).
func RequireEnv(t *testing.T, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v != "" {
		return v
	}
	msg := fmt.Sprintf("%s is not set: start the emulators with scripts/emulators/run.sh (or scripts/test.sh)", name)
	if os.Getenv("CI") == "true" {
		t.Fatal("CI=true: " + msg)
	}
	t.Skip(msg)
	return ""
}

// S3URL returns an s3:// table URL for prefix on the S3 server at endpoint.
func S3URL(endpoint, bucket, prefix string) string {
	return "s3://" + bucket + "/" + prefix + "?" + s3Query(endpoint)
}

func s3Query(endpoint string) string {
	q := url.Values{}
	q.Set("endpoint", endpoint)
	q.Set("region", "us-east-1")
	q.Set("use_path_style", "true")
	return q.Encode()
}

// S3Table returns a fresh table URL on the S3 emulator (versitygw).
func S3Table(t *testing.T) string {
	ep := RequireEnv(t, EnvS3)
	if err := EnsureS3Bucket(context.Background(), ep, Bucket); err != nil {
		t.Fatal(err)
	}
	return S3URL(ep, Bucket, "tables/"+TableName(t))
}

// EnsureS3Bucket creates bucket on the S3 server at endpoint unless it exists.
func EnsureS3Bucket(ctx context.Context, endpoint, bucket string) error {
	b, err := blob.OpenBucket(ctx, "s3://"+bucket+"?"+s3Query(endpoint))
	if err != nil {
		return fmt.Errorf("open s3 bucket %s at %s: %w", bucket, endpoint, err)
	}
	defer b.Close()
	var c *s3.Client
	if !b.As(&c) {
		return errors.New("s3blob bucket is not an *s3.Client")
	}
	_, err = c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket})
	var ae smithy.APIError
	if errors.As(err, &ae) && (ae.ErrorCode() == "BucketAlreadyOwnedByYou" || ae.ErrorCode() == "BucketAlreadyExists") {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create s3 bucket %s at %s: %w", bucket, endpoint, err)
	}
	return nil
}

// GCSTable returns a fresh table URL on the GCS emulator (fake-gcs-server;
// the gcsblob driver finds it through STORAGE_EMULATOR_HOST).
func GCSTable(t *testing.T) string {
	RequireEnv(t, EnvGCS)
	if os.Getenv("STORAGE_EMULATOR_HOST") == "" {
		t.Fatalf("%s is set but STORAGE_EMULATOR_HOST is not", EnvGCS)
	}
	ctx := context.Background()
	c := bucketClient[*storage.Client](t, "gs://"+Bucket)
	err := c.Bucket(Bucket).Create(ctx, "compactord-test-project", nil)
	var ge *googleapi.Error
	if err != nil && !(errors.As(err, &ge) && ge.Code == 409) {
		t.Fatalf("create gcs bucket %s: %v", Bucket, err)
	}
	return "gs://" + Bucket + "/tables/" + TableName(t)
}

// AzureTable returns a fresh table URL on the Azure emulator (azurite);
// the account and key come from AZURE_STORAGE_ACCOUNT/AZURE_STORAGE_KEY.
func AzureTable(t *testing.T) string {
	ep := RequireEnv(t, EnvAzure)
	u, err := url.Parse(ep)
	if err != nil {
		t.Fatalf("%s=%q: %v", EnvAzure, ep, err)
	}
	q := url.Values{}
	q.Set("protocol", u.Scheme)
	q.Set("domain", u.Host)
	ctx := context.Background()
	c := bucketClient[*container.Client](t, "azblob://"+Bucket+"?"+q.Encode())
	if _, err := c.Create(ctx, nil); err != nil && !bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
		t.Fatalf("create azure container %s: %v", Bucket, err)
	}
	return "azblob://" + Bucket + "/tables/" + TableName(t) + "?" + q.Encode()
}

// bucketClient opens the bucket at bucketURL (closed when the test ends)
// and returns its driver's client of type C.
func bucketClient[C any](t *testing.T, bucketURL string) C {
	t.Helper()
	b, err := blob.OpenBucket(context.Background(), bucketURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	var c C
	if !b.As(&c) {
		t.Fatalf("the bucket's driver has no %T client", c)
	}
	return c
}

var unsafeChars = regexp.MustCompile(`[^a-zA-Z0-9-]+`)

// TableName is a unique, key-safe name derived from the test's name.
func TableName(t *testing.T) string {
	name := strings.Trim(unsafeChars.ReplaceAllString(t.Name(), "-"), "-")
	if len(name) > 60 {
		name = name[len(name)-60:]
	}
	return strings.ToLower(name) + "-" + strings.ToLower(rand.Text()[:8])
}
