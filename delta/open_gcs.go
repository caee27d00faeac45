package delta

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strconv"

	"gocloud.dev/blob"
	"gocloud.dev/blob/gcsblob"
	"gocloud.dev/gcp"
	"golang.org/x/oauth2/google"
	"google.golang.org/api/option"
)

// openGCSBucket opens a gs:// bucket URL. gocloud's default gs opener prints
// a warning to stdout when it finds no Application Default Credentials and
// then goes on without any; a command's stdout carries only its output, so
// the credentials are looked up here: none found is an error that says what
// to set, and ?anonymous=true (a public bucket) skips the lookup. With a
// storage emulator configured, gocloud's own opener is used (it takes fake
// credentials and prints nothing).
func openGCSBucket(ctx context.Context, bucketURL *url.URL) (*blob.Bucket, error) {
	if os.Getenv("STORAGE_EMULATOR_HOST") != "" || os.Getenv("STORAGE_EMULATOR_HOST_GRPC") != "" {
		return blob.OpenBucket(ctx, bucketURL.String())
	}
	q := bucketURL.Query()
	anonymous := q.Get("access_id") == "-"
	if a := q.Get("anonymous"); a != "" {
		v, err := strconv.ParseBool(a)
		if err != nil {
			return nil, fmt.Errorf("invalid value %q for query parameter \"anonymous\": %w", a, err)
		}
		anonymous = anonymous || v
	}
	opener := &gcsblob.URLOpener{}
	if !anonymous {
		var creds *google.Credentials
		var err error
		if ud := q.Get("universe_domain"); ud != "" {
			creds, err = gcp.DefaultCredentialsWithParams(ctx, google.CredentialsParams{UniverseDomain: ud})
		} else {
			creds, err = gcp.DefaultCredentials(ctx)
		}
		if err != nil {
			return nil, fmt.Errorf("no Google Cloud credentials (set GOOGLE_APPLICATION_CREDENTIALS or run `gcloud auth application-default login`; add ?anonymous=true for a public bucket): %w", err)
		}
		if ud, err := creds.GetUniverseDomain(); err == nil && ud != "" {
			opener.Options.ClientOptions = append(opener.Options.ClientOptions, option.WithUniverseDomain(ud))
		}
		client, err := gcp.NewHTTPClient(gcp.DefaultTransport(), creds.TokenSource)
		if err != nil {
			return nil, fmt.Errorf("google cloud storage client: %w", err)
		}
		opener.Client = client
		opener.TokenSource = gcp.CredentialsTokenSource(creds)
	}
	return opener.OpenBucketURL(ctx, bucketURL)
}
