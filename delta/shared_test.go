package delta_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/compactord/compactord/delta"
	deltaactions "github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/internal/testutil/logtest"
)

// Tables of one schema and one configuration share one parsed schema and
// one set of properties through Shared; a table of other properties keeps
// its own; and advancing one table's snapshot changes nothing another
// table's snapshot reads.
func TestSharedGivesTablesOfOneSchemaOneParsedSchemaAndAdvancingOneLeavesTheOthers(t *testing.T) {
	ctx := context.Background()
	confs := []map[string]string{nil, nil, {"delta.checkpointInterval": "5"}}
	tables := make([]*delta.Table, len(confs))
	snaps := make([]*delta.Snapshot, len(confs))
	c := delta.NewShared()
	for i, conf := range confs {
		tables[i] = logtest.Create(t, t.TempDir(), logtest.Spec{Configuration: conf})
		logtest.Commit(t, tables[i], 1, deltaactions.Action{Add: logtest.AddFile(fmt.Sprintf("f%d.parquet", i), "", 10)})
		snap, err := delta.LoadSnapshot(ctx, tables[i], -1)
		if err != nil {
			t.Fatal(err)
		}
		if snaps[i], err = snap.Slim(nil, nil); err != nil {
			t.Fatal(err)
		}
		c.Share(snaps[i])
	}
	a, b, other := snaps[0], snaps[1], snaps[2]
	if a.Schema != b.Schema || a.Properties() != b.Properties() {
		t.Fatal("two tables of one schema and no properties kept a parsed schema or properties each")
	}
	if other.Schema != a.Schema || other.Properties() == a.Properties() || other.Properties().CheckpointInterval != 5 || a.Properties().CheckpointInterval == 5 {
		t.Fatalf("the table with its own checkpoint interval: schema shared %v, properties shared %v, interval %d",
			other.Schema == a.Schema, other.Properties() == a.Properties(), other.Properties().CheckpointInterval)
	}
	before := logtest.StateOf(b)
	bSchema := *b.Schema
	logtest.Commit(t, tables[0], 2, deltaactions.Action{Add: logtest.AddFile("g.parquet", "", 20)})
	next, ok, err := delta.Advance(ctx, tables[0], a, 10)
	if err != nil || !ok {
		t.Fatalf("advance: ok %v, %v", ok, err)
	}
	c.Share(next)
	if next.Version != 2 || len(next.Files) != 2 || next.Schema != a.Schema {
		t.Fatalf("advanced: version %d, %d files, schema shared %v", next.Version, len(next.Files), next.Schema == a.Schema)
	}
	if after := logtest.StateOf(b); !reflect.DeepEqual(after, before) || !reflect.DeepEqual(*b.Schema, bSchema) || b.Version != 1 {
		t.Fatalf("advancing one table changed another's snapshot:\n%+v\n%+v", before, after)
	}
}
