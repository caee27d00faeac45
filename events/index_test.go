package events

import "testing"

func TestAnObjectMapsToTheWatchedTableWhoseRootIsItsLongestPrefix(t *testing.T) {
	ix, err := NewIndex([]Table{
		{"outer", "s3://lake/sales"},
		{"inner", "s3a://lake/sales/orders/?endpoint=http://127.0.0.1:1"},
		{"bucket", "s3://whole"},
		{"gcs", "gs://lake/sales"},
		{"azure", "azblob://lake/sales?storage_account=acct"},
		{"local", "file:///tmp/sales"},
		{"spaced", "s3://lake/with%20space/t"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if ix.Len() != 6 {
		t.Fatalf("indexed %d tables, want 6 (file:// is never named by an event)", ix.Len())
	}
	commit := "_delta_log/00000000000000000003.json"
	for _, tc := range []struct {
		obj  Object
		want Match
	}{
		{Object{StoreS3, "lake", "sales/orders/" + commit, KindCreated}, Match{"inner", commit, true}},
		{Object{StoreS3, "lake", "sales/" + commit, KindCreated}, Match{"outer", commit, true}},
		// A sibling whose name extends the inner root is the outer table's.
		{Object{StoreS3, "lake", "sales/orders2/" + commit, KindCreated}, Match{"outer", "orders2/" + commit, false}},
		{Object{StoreS3, "lake", "sales/orders/part-0001.parquet", KindCreated}, Match{"inner", "part-0001.parquet", false}},
		{Object{StoreS3, "lake", "sales/orders/_delta_log/00000000000000000003.checkpoint.parquet", KindCreated}, Match{"inner", "_delta_log/00000000000000000003.checkpoint.parquet", false}},
		{Object{StoreS3, "lake", "sales/orders/_delta_log/_last_checkpoint", KindCreated}, Match{"inner", "_delta_log/_last_checkpoint", false}},
		// Canonical forms: dot segments and doubled slashes are one key.
		{Object{StoreS3, "lake", "sales/x/../orders//./" + commit, KindCreated}, Match{"inner", commit, true}},
		{Object{StoreS3, "whole", commit, KindCreated}, Match{"bucket", commit, true}},
		{Object{StoreS3, "lake", "with space/t/" + commit, KindCreated}, Match{"spaced", commit, true}},
		{Object{StoreGCS, "lake", "sales/" + commit, KindCreated}, Match{"gcs", commit, true}},
		{Object{StoreAzure, "lake", "sales/" + commit, KindCreated}, Match{"azure", commit, true}},
		// Outside every table.
		{Object{StoreS3, "lake", "other/" + commit, KindCreated}, Match{}},
		{Object{StoreS3, "lake", "sales", KindCreated}, Match{}},
		{Object{StoreS3, "lake", "../lake/sales/" + commit, KindCreated}, Match{}},
		{Object{StoreS3, "elsewhere", "sales/" + commit, KindCreated}, Match{}},
		{Object{StoreGCS, "whole", commit, KindCreated}, Match{}},
		{Object{StoreS3, "tmp", "sales/" + commit, KindCreated}, Match{}},
	} {
		if got := ix.Lookup(tc.obj); got != tc.want {
			t.Errorf("Lookup(%s://%s/%s) = %+v, want %+v", tc.obj.Store, tc.obj.Bucket, tc.obj.Key, got, tc.want)
		}
	}
}
