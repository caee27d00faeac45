package retention

import (
	"context"
	"errors"
	"testing"

	"github.com/compactord/compactord/internal/testutil/tabletest"
)

// A retention delete whose DV file lands and then fails (the put's Close
// answers an error) leaves nothing behind: the file was in the attempt's
// objects and intent record before it was created, and the attempt's
// Clean deletes it with the record; the table is unchanged.
func TestExpireLeavesNoDVFileWhoseCloseFailedAfterItLanded(t *testing.T) {
	tbl := tabletest.NewTable(t, fileURL(t), tabletest.IDRange(0, 10), tabletest.IDRange(10, 10))
	fail := tabletest.FailClosesAfterLanding(t, tbl, "deletion_vector_")
	_, err := Expire(context.Background(), tbl, Options{Column: "id", EpochUnit: "days", Before: "5", Logger: tabletest.Logger(t)})
	if !errors.Is(err, tabletest.ErrClosedAfterLanding) {
		t.Fatalf("Expire = %v, want the failed close", err)
	}
	fail.WantNoneLeft(t, tbl)
	tabletest.WantIDs(t, tbl, tabletest.IDSet(tabletest.IDRange(0, 20)))
}
