package main

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/hashicorp/go-hclog"

	"github.com/compactord/compactord/internal/testutil/stores"
	"github.com/compactord/compactord/policies"
)

// The daemon block's attempt_stale_after is the window of the daemon's
// runs' start-of-run sweeps (runner.Backend.Options, which compaction and
// retention read; runner's TestCompactionRunReportsTheAttemptsItsStartSwept
// runs such a sweep).
func TestTheDaemonsRunsSweepWithItsAttemptWindow(t *testing.T) {
	dc := policies.DefaultDaemon()
	dc.AttemptStaleAfter = 7 * time.Minute
	if got := newRunner(hclog.NewNullLogger(), dc, nil).Options.AttemptStaleAfter; got != 7*time.Minute {
		t.Fatalf("the daemon's runs sweep with a %v window, want 7m", got)
	}
}

// The daemon's tables of one bucket share one S3 client (delta.BucketPool):
// a fleet of a thousand tables keeps one client and connection pool, not
// one each.
func TestTheDaemonsTablesOfOneBucketShareOneClient(t *testing.T) {
	stores.FakeS3Credentials(t)
	ctx := context.Background()
	f := stores.NewFakeS3(t, stores.FakeS3Options{})
	tables := newRunner(hclog.NewNullLogger(), policies.DefaultDaemon(), nil).Tables
	defer tables.Retain(nil)
	var clients []*s3.Client
	for _, prefix := range []string{"tables/a", "tables/b"} {
		tbl, err := tables.Get(ctx, f.URL(prefix))
		if err != nil {
			t.Fatal(err)
		}
		var c *s3.Client
		if !tbl.Bucket.As(&c) {
			t.Fatal("the table's bucket is not an S3 client")
		}
		clients = append(clients, c)
	}
	if clients[0] != clients[1] {
		t.Fatal("two tables of one bucket have their own S3 clients, want one shared")
	}
}
