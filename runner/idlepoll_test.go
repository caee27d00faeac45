package runner

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/internal/testutil/logtest"
	"github.com/compactord/compactord/internal/testutil/stores"
	"github.com/compactord/compactord/internal/testutil/tabletest"
)

// The poll of an idle table on an object store costs one request (the
// existence check of the next commit), poll after poll, and a new commit
// is seen at the next poll. (When the table handle's finding that its
// version is the newest is too old to rule out a log cleanup, the poll also
// checks that version: delta's TestHasNewerFindsCleanedUpHistoryOnceItsFindingIsOld.)
func TestThePollOfAnIdleTableCostsOneRequest(t *testing.T) {
	ctx := context.Background()
	stores.FakeS3Credentials(t)
	s3 := stores.NewFakeS3(t, stores.FakeS3Options{})
	u := s3.URL("idle")
	tbl := tabletest.NewTable(t, u, tabletest.IDRange(0, 10), tabletest.IDRange(10, 10))
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	be := &Backend{Tables: NewTables(), Now: func() time.Time { return now }}
	defer be.Tables.Close()
	p := testPolicy("idle")
	p.URL = u

	res, err := be.Poll(ctx, p, -1)
	if err != nil || !res.Changed {
		t.Fatalf("first poll: %+v, %v", res, err)
	}
	v := res.Version
	s3.TakeRequests()
	for i := range 5 {
		now = now.Add(time.Minute)
		res, err := be.Poll(ctx, p, v)
		if err != nil || res.Changed || res.Version != v {
			t.Fatalf("idle poll %d: %+v, %v", i, res, err)
		}
		if reqs := s3.TakeRequests(); len(reqs) != 1 || !strings.HasSuffix(reqs[0], logpath.CommitKey(v+1)) {
			t.Fatalf("idle poll %d made %d requests %v, want one check of commit %d", i, len(reqs), reqs, v+1)
		}
	}

	add := &actions.Add{Path: "part-new.parquet", Size: 10, PartitionValues: map[string]*string{}, ModificationTime: now.UnixMilli(), DataChange: true}
	logtest.Commit(t, tbl, v+1, actions.Action{Add: add})
	now = now.Add(time.Minute)
	res, err = be.Poll(ctx, p, v)
	if err != nil || !res.Changed || res.Version != v+1 || res.Backlog == nil || res.Backlog.Files != 3 {
		t.Fatalf("poll after a commit: %+v, %v", res, err)
	}
}
