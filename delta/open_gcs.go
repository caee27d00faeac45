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
		creds, err := gcsCredentials(ctx, q.Get("universe_domain"))
		if err != nil {
			return nil, err
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

// gcsCredentials looks up the Application Default Credentials of a bucket
// (universeDomain when the URL names one). The credentials' token source
// keeps the context it was made with and refreshes tokens with it for as long
// as the bucket is open, long after the open's own context (a poll's, with
// its deadline) has ended: the lookup gets the open's values without its
// cancellation, so a refresh an hour later does not fail as canceled.
func gcsCredentials(ctx context.Context, universeDomain string) (*google.Credentials, error) {
	lasting := context.WithoutCancel(ctx)
	var creds *google.Credentials
	var err error
	if universeDomain != "" {
		creds, err = gcp.DefaultCredentialsWithParams(lasting, google.CredentialsParams{UniverseDomain: universeDomain})
	} else {
		creds, err = gcp.DefaultCredentials(lasting)
	}
	if err != nil {
		return nil, fmt.Errorf("no Google Cloud credentials (set GOOGLE_APPLICATION_CREDENTIALS or run `gcloud auth application-default login`; add ?anonymous=true for a public bucket): %w", err)
	}
	return creds, nil
}
