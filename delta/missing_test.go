package delta_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/compactord/compactord/delta/scan"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/dv"
	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/internal/testutil/tabletest"
)

// A data file or a deletion vector the log names but the store does not
// hold is a missing file naming the data file (class Retry: one read's
// miss is no proof), never a corrupt one.
func TestAnObjectTheLogNamesButTheStoreLacksIsAMissingFileNamingItsDataFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tbl := tabletest.NewTable(t, "file://"+dir, tabletest.IDRange(0, 10), tabletest.IDRange(10, 10))
	tabletest.DeleteIDs(t, tbl, 12)
	snap := tabletest.Latest(t, tbl)
	var plain, withDV *actions.Add
	for _, a := range snap.Files {
		if a.DeletionVector != nil {
			withDV = a
		} else {
			plain = a
		}
	}
	if plain == nil || withDV == nil {
		t.Fatalf("want a file with a DV and one without: %+v", snap.Files)
	}
	dvKey, err := dv.DVFileKey(withDV.DeletionVector.PathOrInlineDv)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{plain.Path, dvKey} {
		if err := os.Remove(filepath.Join(dir, filepath.FromSlash(k))); err != nil {
			t.Fatal(err)
		}
	}
	check := func(what string, err error, kind failure.Kind, dataFile string) {
		t.Helper()
		var mf *failure.MissingFileError
		if !errors.As(err, &mf) || mf.Kind != kind || mf.DataFile != dataFile {
			t.Fatalf("%s: %v, want a missing %s of %s", what, err, kind, dataFile)
		}
		if failure.Of(err) != failure.Retry || failure.CorruptDataFiles(err) != nil || !slices.Equal(failure.MissingDataFiles(err), []string{dataFile}) {
			t.Fatalf("%s: class %v, corrupt %v, missing %v", what, failure.Of(err), failure.CorruptDataFiles(err), failure.MissingDataFiles(err))
		}
	}
	_, err = scan.OpenFileScan(ctx, tbl, snap, plain, scan.ScanOptions{})
	check("scan of the missing file", err, failure.DataFile, plain.Path)
	sized := *plain
	sized.Size = 0 // stat first
	_, err = scan.OpenFileScan(ctx, tbl, snap, &sized, scan.ScanOptions{})
	check("scan of the missing file of unknown size", err, failure.DataFile, plain.Path)
	_, err = delta.LoadFileDV(ctx, tbl, withDV, 10)
	check("DV of the file whose DV file is missing", err, failure.DeletionVector, withDV.Path)
}
