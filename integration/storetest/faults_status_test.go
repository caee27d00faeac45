package storetest

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/compactord/compactord/internal/testutil/stores"

	"gocloud.dev/gcerrors"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/internal/testutil/faultproxy"
	"github.com/compactord/compactord/objstore"
)

// cutRefusals are the answers whose body the proxy of
// TestARefusalWhoseBodyIsCutIsKnownByItsStatus cuts, every time: a failed
// precondition (S3 and GCS 412, Azure 412 or 409 for an existing blob) and
// a missing object.
var cutRefusals = []int{http.StatusNotFound, http.StatusConflict, http.StatusPreconditionFailed}

// behindProxy returns the URL of a fresh table on store and a proxy that
// cuts the body of every refusal (cutRefusals) to a request on a key under
// "_compactord/"; open the returned URL (and only it) after proxied
// returns. direct is the same table without the proxy. The proxy fronts
// the in-process S3 fake ("fake-s3") and the emulators the test scripts
// start (the GCS one through STORAGE_EMULATOR_HOST, so the direct handle
// is opened before the variable points at the proxy).
func behindProxy(t *testing.T, store string) (direct *delta.Table, proxied string, p *faultproxy.Proxy) {
	t.Helper()
	opts := faultproxy.Options{CutStatus: cutRefusals,
		// GCS uploads name the object in the query (name=...%2F_compactord%2F...).
		Match: func(r *http.Request) bool { return strings.Contains(r.URL.RequestURI(), "_compactord") }}
	switch store {
	case "fake-s3":
		f, p := fakeS3Behind(t, opts)
		prefix := "tables/" + stores.TableName(t)
		return stores.Open(t, f.URL(prefix)), stores.S3URL(p.URL, stores.Bucket, prefix), p
	case "s3":
		ep := stores.RequireEnv(t, stores.EnvS3)
		if err := stores.EnsureS3Bucket(context.Background(), ep, stores.Bucket); err != nil {
			t.Fatal(err)
		}
		p := faultproxy.New(t, ep, opts)
		prefix := "tables/" + stores.TableName(t)
		return stores.Open(t, stores.S3URL(ep, stores.Bucket, prefix)), stores.S3URL(p.URL, stores.Bucket, prefix), p
	case "gcs":
		raw := stores.GCSTable(t)
		direct := stores.Open(t, raw)
		p := faultproxy.New(t, stores.RequireEnv(t, stores.EnvGCS), opts)
		t.Setenv("STORAGE_EMULATOR_HOST", strings.TrimPrefix(p.URL, "http://"))
		return direct, raw, p
	case "azure":
		raw := stores.AzureTable(t)
		ep, err := url.Parse(stores.RequireEnv(t, stores.EnvAzure))
		if err != nil {
			t.Fatal(err)
		}
		p := faultproxy.New(t, ep.Scheme+"://"+ep.Host, opts)
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		q.Set("domain", strings.TrimPrefix(p.URL, "http://"))
		u.RawQuery = q.Encode()
		return stores.Open(t, raw), u.String(), p
	}
	t.Fatalf("no store %q", store)
	return nil, "", nil
}

func TestARefusalWhoseBodyIsCutIsKnownByItsStatus(t *testing.T) {
	ctx := context.Background()
	const key = "_compactord/cut-refusal"
	checks := []struct {
		name string
		// run acts through the proxy on tbl, whose direct handle holds
		// key already.
		run func(t *testing.T, tbl *delta.Table, cs objstore.ConditionalStore, token string)
	}{
		{"the put-if-absent probe's refused second write proves put-if-absent", func(t *testing.T, tbl *delta.Table, _ objstore.ConditionalStore, _ string) {
			if err := tbl.CheckPutIfAbsent(ctx); err != nil {
				t.Fatalf("probe: %v", err)
			}
		}},
		{"a create of an existing key is refused, not unknown", func(t *testing.T, _ *delta.Table, cs objstore.ConditionalStore, _ string) {
			err := cs.CreateIfAbsent(ctx, key, []byte(`{"n":2}`))
			if !errors.Is(err, objstore.ErrPreconditionFailed) || errors.Is(err, objstore.ErrAmbiguous) {
				t.Fatalf("create of an existing key = %v, want ErrPreconditionFailed alone", err)
			}
		}},
		{"a replace of a stale version is refused, not unknown", func(t *testing.T, _ *delta.Table, cs objstore.ConditionalStore, token string) {
			err := cs.ReplaceIfMatch(ctx, key, []byte(`{"n":3}`), token)
			if !errors.Is(err, objstore.ErrPreconditionFailed) || errors.Is(err, objstore.ErrAmbiguous) {
				t.Fatalf("replace of a stale version = %v, want ErrPreconditionFailed alone", err)
			}
		}},
		{"a read of a missing key is not found", func(t *testing.T, _ *delta.Table, cs objstore.ConditionalStore, _ string) {
			if _, _, err := cs.ReadVersioned(ctx, key+"-missing"); !errors.Is(err, objstore.ErrObjectNotFound) {
				t.Fatalf("read of a missing key = %v, want ErrObjectNotFound", err)
			}
		}},
		{"a read of a missing object is not found", func(t *testing.T, tbl *delta.Table, _ objstore.ConditionalStore, _ string) {
			if _, err := tbl.Bucket.ReadAll(ctx, key+"-missing"); gcerrors.Code(err) != gcerrors.NotFound {
				t.Fatalf("read of a missing object = %v (code %v), want NotFound", err, gcerrors.Code(err))
			}
		}},
	}
	for _, store := range []string{"fake-s3", "s3", "gcs", "azure"} {
		t.Run(store, func(t *testing.T) {
			for _, c := range checks {
				t.Run(c.name, func(t *testing.T) {
					direct, proxied, p := behindProxy(t, store)
					dcs, err := direct.Conditional()
					if err != nil {
						t.Fatal(err)
					}
					if err := dcs.CreateIfAbsent(ctx, key, []byte(`{"n":1}`)); err != nil {
						t.Fatal(err)
					}
					_, stale, err := dcs.ReadVersioned(ctx, key)
					if err != nil {
						t.Fatal(err)
					}
					_, cur, err := dcs.ReadVersioned(ctx, key)
					if err != nil {
						t.Fatal(err)
					}
					if err := dcs.ReplaceIfMatch(ctx, key, []byte(`{"n":1,"again":true}`), cur); err != nil {
						t.Fatal(err)
					}
					tbl := stores.Open(t, proxied)
					cs, err := tbl.Conditional()
					if err != nil {
						t.Fatal(err)
					}
					c.run(t, tbl, cs, stale)
					if _, faults := p.Stats(); faults[faultproxy.CutBody] == 0 {
						t.Fatal("no refusal's body was cut: the test proves nothing")
					}
					got, err := direct.Bucket.ReadAll(ctx, key)
					if err != nil || string(got) != `{"n":1,"again":true}` {
						t.Fatalf("%s after the refused writes: %q, %v; want the direct replace's body", key, got, err)
					}
				})
			}
		})
	}
}
