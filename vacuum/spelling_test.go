package vacuum

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	deltadv "github.com/compactord/compactord/delta/dv"
	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/internal/attemptsweep"
	"github.com/compactord/compactord/internal/testutil"
	"github.com/compactord/compactord/internal/testutil/logtest"
)

// TestRandomizedSpellingsDeleteWhatTheModelSays writes random mixes of
// path spellings (./, a/../, doubled slashes, percent escapes in either
// case, absolute file:// URIs of the table) for adds, removes, cdc
// actions, deletion vectors and intent records, with hostile references
// to the log, _compactord/ and outside the root among them, then runs lite
// vacuum, full vacuum and the sweep of dead attempts. After each, the set
// of deleted objects must equal the one a model computes from what the
// test knows each spelling means (unreferenced, outside _delta_log/ and
// _compactord/, inside the root, older than the cutoff; intent records
// name their keys canonically, so another spelling there is refused).
func TestRandomizedSpellingsDeleteWhatTheModelSays(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("COMPACTORD_SPELLING_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (COMPACTORD_SPELLING_SEED)", seed)
	rounds := 25
	if raceEnabled {
		rounds = 8
	}
	for i := range rounds {
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		t.Run(fmt.Sprint(i), func(t *testing.T) { spellingRound(t, rng) })
	}
}

// spell returns a random spelling of key as a log path of the table at dir
// (each resolves to key).
func spell(rng *rand.Rand, dir, key string) string {
	s := key
	switch rng.IntN(6) {
	case 1:
		s = "./" + s
	case 2:
		s = "zz/../" + s
	case 3:
		if i := strings.IndexByte(s, '/'); i > 0 {
			s = s[:i] + "//" + s[i+1:]
		} else {
			s = "./" + s
		}
	case 4:
		s = "file://" + filepath.ToSlash(dir) + "/" + s
	case 5:
		s = "file:" + filepath.ToSlash(dir) + "/./" + s
	}
	if rng.IntN(2) == 0 {
		// Percent-escape some characters, hex digits in either case.
		var b strings.Builder
		for i := 0; i < len(s); i++ {
			c := s[i]
			if c != '/' && c != ':' && rng.IntN(4) == 0 && !strings.HasPrefix(s, "file:") {
				h := fmt.Sprintf("%%%02X", c)
				if rng.IntN(2) == 0 {
					h = strings.ToLower(h)
				}
				b.WriteString(h)
				continue
			}
			b.WriteByte(c)
		}
		s = b.String()
	}
	return s
}

func spellingRound(t *testing.T, rng *rand.Rand) {
	ctx := context.Background()
	dir := t.TempDir()
	outside := t.TempDir()
	tbl := logtest.Create(t, dir, logtest.Spec{})
	now := time.Now()
	old, recent := now.Add(-40*24*time.Hour), now.Add(-time.Hour)
	oldMs, recentMs := old.UnixMilli(), recent.UnixMilli()

	type file struct {
		key   string
		old   bool // modified before the cutoff
		dv    bool // a deletion-vector file
		z85   string
		fate  int // 0 live, 1 expired tombstone, 2 recent tombstone, 3 orphan, 4 cdc
		inRec int // 0 not recorded, 1 recorded canonically, 2 recorded in another spelling
	}
	var files []*file
	write := func(key string, mod time.Time) {
		p := filepath.Join(dir, filepath.FromSlash(key))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("data of "+key), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	n := 8 + rng.IntN(10)
	for i := range n {
		f := &file{old: rng.IntN(4) != 0, fate: rng.IntN(5), inRec: rng.IntN(3)}
		if rng.IntN(4) == 0 && f.fate <= 2 {
			var u [16]byte
			for j := range u {
				u[j] = byte(rng.IntN(256))
			}
			f.dv, f.z85 = true, deltadv.Z85Encode(u[:])
			k, err := deltadv.DVFileKey(f.z85)
			if err != nil {
				t.Fatal(err)
			}
			f.key = k
		} else if rng.IntN(2) == 0 {
			f.key = fmt.Sprintf("d%d/part-%02d.parquet", rng.IntN(2), i)
		} else {
			f.key = fmt.Sprintf("part-%02d.parquet", i)
		}
		mod := recent
		if f.old {
			mod = old
		}
		write(f.key, mod)
		files = append(files, f)
	}
	// The actions: each data file's add (in some spelling), its remove
	// when it is a tombstone, a cdc action for the cdc ones; DV files hang
	// off an add or remove of a data file of their own.
	var v1, v2 []actions.Action
	// removeOf is the remove of a tombstone: deleted before the retention
	// (fate 1) or inside it (fate 2).
	removeOf := func(a *actions.Add, fate int) *actions.Remove {
		ts := oldMs
		if fate == 2 {
			ts = recentMs
		}
		return logtest.RemoveFile(a, ts)
	}
	host := 0
	for _, f := range files {
		switch {
		case f.dv:
			// A carrier data file for the DV, live or tombstoned with it.
			host++
			ck := fmt.Sprintf("carrier-%02d.parquet", host)
			write(ck, old)
			files = append(files, &file{key: ck, old: true, fate: f.fate})
			off := int32(1)
			dvd := &actions.DeletionVector{StorageType: "u", PathOrInlineDv: []string{"", "./", "q/../"}[rng.IntN(3)] + f.z85,
				Offset: &off, SizeInBytes: 10, Cardinality: 1}
			a := logtest.AddFile(spell(rng, dir, ck), "", 5)
			a.DeletionVector = dvd
			v1 = append(v1, actions.Action{Add: a})
			if f.fate > 0 {
				rm := removeOf(a, f.fate)
				rm.DeletionVector = dvd
				v2 = append(v2, actions.Action{Remove: rm})
			}
		case f.fate == 3:
		case f.fate == 4:
			v1 = append(v1, actions.Action{CDC: &actions.CDC{Path: spell(rng, dir, f.key), PartitionValues: map[string]*string{}, Size: 10}})
		default:
			a := logtest.AddFile(spell(rng, dir, f.key), "", 5)
			v1 = append(v1, actions.Action{Add: a})
			if f.fate > 0 {
				rm := removeOf(a, f.fate)
				rm.Path = a.Path // the remove must match the add's spelling to end it
				v2 = append(v2, actions.Action{Remove: rm})
				if rng.IntN(2) == 0 {
					// A second remove in another spelling: the same file.
					rm2 := removeOf(a, f.fate)
					rm2.Path = spell(rng, dir, f.key)
					v2 = append(v2, actions.Action{Remove: rm2})
				}
			}
		}
	}
	// Hostile removes: the log, compactord's records, outside the root.
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(outside, "sentinel"), []byte("outside"), 0o644))
	rel, err := filepath.Rel(dir, filepath.Join(outside, "sentinel"))
	must(err)
	for _, p := range []string{spell(rng, dir, logpath.CommitKey(0)), spell(rng, dir, "_delta_log/_last_checkpoint"),
		spell(rng, dir, "_compactord/attempts/dead.json"), filepath.ToSlash(rel), "file://" + filepath.ToSlash(outside) + "/sentinel"} {
		ts := oldMs
		v2 = append(v2, actions.Action{Remove: &actions.Remove{Path: p, DeletionTimestamp: &ts, DataChange: true}})
	}
	logtest.Commit(t, tbl, 1, v1...)
	logtest.Commit(t, tbl, 2, v2...)
	logtest.SetTimes(t, dir, func(int64) time.Time { return old })

	// The intent record of a dead attempt.
	var recKeys []string
	for _, f := range files {
		switch f.inRec {
		case 1:
			recKeys = append(recKeys, f.key)
		case 2:
			s := spell(rng, dir, f.key)
			if s == f.key {
				s = "./" + s
			}
			recKeys = append(recKeys, s)
		}
	}
	recKeys = append(recKeys, logpath.CommitKey(1), "_compactord/attempts/dead.json", filepath.ToSlash(rel))
	rec, err := json.Marshal(map[string]any{"format": 1, "attempt": "dead", "operation": "compaction", "owner": "x",
		"started": old, "heartbeat": old, "keys": recKeys})
	must(err)
	write("_compactord/attempts/dead.json", old)
	must(os.WriteFile(filepath.Join(dir, "_compactord", "attempts", "dead.json"), rec, 0o644))
	must(os.Chtimes(filepath.Join(dir, "_compactord", "attempts", "dead.json"), old, old))

	// The model.
	exists := map[string]bool{}
	for _, f := range files {
		exists[f.key] = true
	}
	liveRef := func(f *file) bool { return f.fate == 0 }
	tombRecent := func(f *file) bool { return f.fate == 2 }
	// DV files and their carriers share a fate, so one rule serves both.
	lite := map[string]bool{}
	full := map[string]bool{}
	sweep := map[string]bool{}
	for _, f := range files {
		if liveRef(f) || tombRecent(f) {
			continue
		}
		// Lite: the files that removes (expired) and cdc actions of the
		// commits outside the window name, whatever their age... but
		// only those older than the cutoff by their deletion time: cdc
		// actions count as deleted at 0.
		if f.fate == 1 || f.fate == 4 {
			lite[f.key] = true
		}
	}
	for _, f := range files {
		if lite[f.key] || liveRef(f) || tombRecent(f) || !f.old {
			continue
		}
		full[f.key] = true // an orphan or expired file the listing finds
	}
	for _, f := range files {
		if f.inRec == 1 && !lite[f.key] && !full[f.key] && f.fate != 0 && f.fate != 1 && f.fate != 2 {
			// The sweep keeps what any tombstone references (Referenced
			// holds every tombstone, expired or not).
			sweep[f.key] = true
		}
	}

	opts := Options{Now: func() time.Time { return now }, Logger: hclog.NewNullLogger()}
	run := func(stage string, do func() error, want map[string]bool) {
		t.Helper()
		before := testutil.Files(t, dir)
		if err := do(); err != nil {
			t.Fatalf("%s: %v", stage, err)
		}
		after := testutil.Files(t, dir)
		var gone []string
		for k := range before {
			if !after[k] {
				gone = append(gone, k)
			}
		}
		var wanted []string
		for k := range want {
			if exists[k] {
				wanted = append(wanted, k)
			}
		}
		slices.Sort(gone)
		slices.Sort(wanted)
		if !slices.Equal(gone, wanted) {
			t.Fatalf("%s deleted %q, the model says %q\nv1: %s\nv2: %s\nrecord: %q", stage, gone, wanted, actionsText(v1), actionsText(v2), recKeys)
		}
		for _, k := range gone {
			delete(exists, k)
		}
		if _, err := os.Stat(filepath.Join(outside, "sentinel")); err != nil {
			t.Fatalf("%s: the file outside the table is gone", stage)
		}
	}
	lo := opts
	lo.Mode = Lite
	run("lite vacuum", func() error { _, err := Run(ctx, tbl, lo); return err }, lite)
	fo := opts
	fo.Mode = Full
	run("full vacuum", func() error { _, err := Run(ctx, tbl, fo); return err }, full)
	// The record itself goes too.
	sweep["_compactord/attempts/dead.json"] = true
	exists["_compactord/attempts/dead.json"] = true
	run("attempt sweep", func() error {
		_, err := attemptsweep.Sweep(ctx, tbl, attemptsweep.Options{Now: time.Now, Logger: hclog.NewNullLogger(), Snapshots: delta.LoadSnapshot})
		return err
	}, sweep)
	if _, err := delta.LoadSnapshot(ctx, tbl, -1); err != nil {
		t.Fatalf("the table no longer loads: %v", err)
	}
}

func actionsText(acts []actions.Action) string {
	var b strings.Builder
	for _, a := range acts {
		j, _ := actions.MarshalAction(a)
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}
