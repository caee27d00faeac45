package delta

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/compactord/compactord/delta/actions"
	deltadv "github.com/compactord/compactord/delta/dv"
	"github.com/compactord/compactord/delta/internal/deltatest"
	"github.com/compactord/compactord/failure"
	"github.com/compactord/compactord/internal/testutil"
	"gocloud.dev/blob"
)

// fixtureDV is one DV descriptor found in a test table's log.
type fixtureDV struct {
	table   string // fixture name
	root    string // absolute table root
	file    string // log file it came from
	version string // commit version (log file name prefix)
	action  string // "add" or "remove"
	path    string // data file path
	dv      *actions.DeletionVector
}

// fixtureDVs walks every _delta_log/*.json file (commits and JSON V2
// checkpoints) of every table in the shared testdata and returns all DV
// descriptors of add and remove actions.
func fixtureDVs(t *testing.T) []fixtureDV {
	t.Helper()
	base := testutil.DeltaTestdata(t)
	logs, err := filepath.Glob(filepath.Join(base, "*", "delta", "_delta_log", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	type fileAction struct {
		Path           string                  `json:"path"`
		DeletionVector *actions.DeletionVector `json:"deletionVector"`
	}
	var out []fixtureDV
	for _, lf := range logs {
		root := filepath.Dir(filepath.Dir(lf))
		table := filepath.Base(filepath.Dir(root))
		deltatest.EachLogLine(t, lf, func(line []byte) {
			var a struct {
				Add    *fileAction `json:"add"`
				Remove *fileAction `json:"remove"`
			}
			if err := json.Unmarshal(line, &a); err != nil {
				t.Fatalf("%s: %v", lf, err)
			}
			for kind, fa := range map[string]*fileAction{"add": a.Add, "remove": a.Remove} {
				if fa == nil || fa.DeletionVector == nil {
					continue
				}
				out = append(out, fixtureDV{table: table, root: root, file: lf,
					version: strings.SplitN(filepath.Base(lf), ".", 2)[0],
					action:  kind, path: fa.Path, dv: fa.DeletionVector})
			}
		})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].file != out[j].file {
			return out[i].file < out[j].file
		}
		return out[i].dv.UniqueID() < out[j].dv.UniqueID()
	})
	return out
}

func openTestTable(t *testing.T, root string) *Table {
	t.Helper()
	b, err := blob.OpenBucket(context.Background(), "file://"+filepath.ToSlash(root))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return &Table{URL: "file://" + root, Bucket: b}
}

// rawFixtureBitmap returns the bitmap bytes a descriptor points at, read
// without the code under test (plain file read and slicing).
func rawFixtureBitmap(t *testing.T, fd fixtureDV) []byte {
	t.Helper()
	switch fd.dv.StorageType {
	case "i":
		b, err := deltadv.Z85Decode(fd.dv.PathOrInlineDv, int(fd.dv.SizeInBytes))
		if err != nil {
			t.Fatalf("%s %s: %v", fd.table, fd.version, err)
		}
		return b
	case "u":
		key, err := deltadv.DVFileKey(fd.dv.PathOrInlineDv)
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(fd.root, filepath.FromSlash(key)))
		if err != nil {
			t.Fatalf("%s: %v", fd.table, err)
		}
		off := 1
		if fd.dv.Offset != nil {
			off = int(*fd.dv.Offset)
		}
		size := int(binary.BigEndian.Uint32(data[off:]))
		return data[off+4 : off+4+size]
	}
	t.Fatalf("%s: unexpected storage type %q", fd.table, fd.dv.StorageType)
	return nil
}

func TestEveryFixtureDVDecodesAndReencodesByteForByte(t *testing.T) {
	dvs := fixtureDVs(t)
	if len(dvs) < 50 {
		t.Fatalf("found only %d DV descriptors in the testdata; the walk is broken", len(dvs))
	}
	tables := map[string]*Table{}
	seen := map[string]bool{}
	kinds := map[string]int{}
	for _, fd := range dvs {
		id := fd.table + "|" + fd.dv.UniqueID()
		if seen[id] {
			continue
		}
		seen[id] = true
		kinds[fd.dv.StorageType]++
		tb := tables[fd.root]
		if tb == nil {
			tb = openTestTable(t, fd.root)
			tables[fd.root] = tb
		}
		bm, err := ReadDV(context.Background(), tb, fd.dv)
		if err != nil {
			t.Errorf("%s v%s %s %s: %v", fd.table, fd.version, fd.action, fd.path, err)
			continue
		}
		if int64(bm.GetCardinality()) != fd.dv.Cardinality {
			t.Errorf("%s: cardinality %d, descriptor %d", fd.table, bm.GetCardinality(), fd.dv.Cardinality)
		}
		raw := rawFixtureBitmap(t, fd)
		// Rebuild from the plain values so that the encoder has to make the
		// same container choices as the writer did.
		rebuilt := roaring64.New()
		for _, v := range bm.ToArray() {
			rebuilt.Add(v)
		}
		enc, err := deltadv.EncodeBitmap(rebuilt)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(enc, raw) {
			t.Errorf("%s v%s %s: re-encoded bitmap differs\n got %x\nwant %x", fd.table, fd.version, fd.dv.UniqueID(), enc, raw)
		}
		if fd.dv.StorageType == "u" {
			key, _ := deltadv.DVFileKey(fd.dv.PathOrInlineDv)
			name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(key), "deletion_vector_"), ".bin")
			var u [16]byte
			hexs := strings.ReplaceAll(name, "-", "")
			for i := 0; i < 16; i++ {
				var b byte
				for _, c := range hexs[2*i : 2*i+2] {
					b <<= 4
					if c >= 'a' {
						b |= byte(c-'a') + 10
					} else {
						b |= byte(c - '0')
					}
				}
				u[i] = b
			}
			if got := deltadv.Z85UUID(u); got != fd.dv.PathOrInlineDv {
				t.Errorf("%s: uuid %s encodes to %q, log has %q", fd.table, name, got, fd.dv.PathOrInlineDv)
			}
		}
		if fd.dv.StorageType == "i" && !strings.Contains(fd.dv.PathOrInlineDv, "#") {
			if got := deltadv.Z85Encode(raw); got != fd.dv.PathOrInlineDv {
				t.Errorf("%s: inline DV re-encodes to %q, log has %q", fd.table, got, fd.dv.PathOrInlineDv)
			}
		}
	}
	if kinds["u"] == 0 || kinds["i"] == 0 {
		t.Fatalf("expected both u and i descriptors, got %v", kinds)
	}
	t.Logf("checked %d distinct descriptors: %v", len(seen), kinds)
}

func TestKnownDVAnswers(t *testing.T) {
	dvs := fixtureDVs(t)
	// Deletion vectors on adds, per table and commit version.
	got := map[string][]uint64{}
	for _, fd := range dvs {
		if fd.action != "add" || (fd.table != "dv-small" && fd.table != "dv-inline-cdf" && fd.table != "dv-short-tightbounds-false") {
			continue
		}
		bm, err := ReadDV(context.Background(), openTestTable(t, fd.root), fd.dv)
		if err != nil {
			t.Fatalf("%s v%s: %v", fd.table, fd.version, err)
		}
		got[fd.table+"@"+strings.TrimLeft(fd.version, "0")] = bm.ToArray()
	}
	want := map[string][]uint64{
		"dv-small@1":                  {0, 9},
		"dv-inline-cdf@1":             {0, 9},
		"dv-inline-cdf@3":             {0, 1, 4, 5},
		"dv-inline-cdf@4":             {0, 5},
		"dv-inline-cdf@5":             {3},
		"dv-short-tightbounds-false@": {0, 1, 2}, // version 0
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("DV contents\n got %v\nwant %v", got, want)
	}
}

func TestDigestPortableEncodingOfSixRows(t *testing.T) {
	bm := roaring64.BitmapOf(3, 4, 7, 11, 18, 29)
	enc, err := deltadv.EncodeBitmap(bm)
	if err != nil {
		t.Fatal(err)
	}
	if len(enc) != 44 {
		t.Fatalf("size %d, want 44", len(enc))
	}
	const want = "^Bg9^0rr910000000000iXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L"
	if got := deltadv.Z85Encode(enc); got != want {
		t.Fatalf("z85 %q, want %q", got, want)
	}
	dv, err := InlineDV(bm)
	if err != nil {
		t.Fatal(err)
	}
	if dv.StorageType != "i" || dv.PathOrInlineDv != want || dv.SizeInBytes != 44 || dv.Cardinality != 6 || dv.Offset != nil {
		t.Fatalf("inline descriptor %+v", dv)
	}
	back, err := ReadDV(context.Background(), &Table{URL: "mem://"}, dv)
	if err != nil {
		t.Fatal(err)
	}
	if !back.Equals(bm) {
		t.Fatalf("round trip %v", back.ToArray())
	}
}

func TestEncodeBitmapLayout(t *testing.T) {
	tests := []struct {
		name    string
		rows    []uint64
		buckets uint64
	}{
		{"empty bitmap has no buckets", nil, 0},
		{"rows below 2^32 use one bucket", []uint64{0, 1 << 31}, 1},
		{"a high row emits every bucket below it", []uint64{5, 3<<32 | 7}, 4},
		{"only a high row still starts at bucket 0", []uint64{2<<32 | 1}, 3},
		{"dense ranges become run containers", rangeRows(0, 100000), 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bm := roaring64.BitmapOf(tc.rows...)
			enc, err := deltadv.EncodeBitmap(bm)
			if err != nil {
				t.Fatal(err)
			}
			if m := binary.LittleEndian.Uint32(enc); m != deltadv.BitmapMagicPortable {
				t.Fatalf("magic %d", m)
			}
			if n := binary.LittleEndian.Uint64(enc[4:]); n != tc.buckets {
				t.Fatalf("buckets %d, want %d", n, tc.buckets)
			}
			back, err := deltadv.DecodeBitmap(enc)
			if err != nil {
				t.Fatal(err)
			}
			if !back.Equals(bm) {
				t.Fatalf("round trip changed the set: %d vs %d rows", back.GetCardinality(), bm.GetCardinality())
			}
		})
	}
	// A run-optimized dense range is much smaller than its array form.
	enc, _ := deltadv.EncodeBitmap(roaring64.BitmapOf(rangeRows(0, 100000)...))
	if len(enc) > 64 {
		t.Fatalf("dense range encoded in %d bytes; expected run containers", len(enc))
	}
}

func rangeRows(from, to uint64) []uint64 {
	out := make([]uint64, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

func TestEncodeBitmapRefusesAbsurdRowIndexes(t *testing.T) {
	if _, err := deltadv.EncodeBitmap(roaring64.BitmapOf(1 << 50)); err == nil {
		t.Fatal("row 2^50 encoded (it would spell out 2^18 empty buckets)")
	}
	if _, err := deltadv.EncodeBitmap(roaring64.BitmapOf(1<<48 | 5)); err != nil {
		t.Fatalf("row 2^48+5: %v", err)
	}
}

func TestDecodeLegacyNativeLayout(t *testing.T) {
	// Native layout: LE magic 1681511376, int32 count, then per bitmap an
	// int32 length and a standard 32-bit Roaring bitmap; index = key.
	want := roaring64.BitmapOf(1, 2, 1<<32|9)
	portable, err := deltadv.EncodeBitmap(want)
	if err != nil {
		t.Fatal(err)
	}
	// Take the two 32-bit bitmaps out of the portable encoding.
	p := portable[12:]
	var parts [][]byte
	for len(p) > 0 {
		size, _, ok := deltadv.Roaring32Size(p[4:])
		if !ok {
			t.Fatal("not a valid 32-bit Roaring bitmap")
		}
		parts = append(parts, p[4:4+size])
		p = p[4+size:]
	}
	var native []byte
	native = binary.LittleEndian.AppendUint32(native, deltadv.BitmapMagicNative)
	native = binary.LittleEndian.AppendUint32(native, uint32(len(parts)))
	for _, part := range parts {
		native = binary.LittleEndian.AppendUint32(native, uint32(len(part)))
		native = append(native, part...)
	}
	got, err := deltadv.DecodeBitmap(native)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equals(want) {
		t.Fatalf("native decode %v", got.ToArray())
	}
}

func TestDecodeBitmapRejectsBadInput(t *testing.T) {
	good, _ := deltadv.EncodeBitmap(roaring64.BitmapOf(3, 4, 7, 1<<32))
	mut := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	tests := []struct {
		name string
		data []byte
	}{
		{"empty input", nil},
		{"bad magic", mut(func(b []byte) []byte { b[0] ^= 0xff; return b })},
		{"big-endian magic", mut(func(b []byte) []byte { binary.BigEndian.PutUint32(b, deltadv.BitmapMagicPortable); return b })},
		{"truncated count", good[:8]},
		{"huge bucket count", mut(func(b []byte) []byte { binary.LittleEndian.PutUint64(b[4:], 1<<60); return b })},
		{"truncated bucket", good[:len(good)-3]},
		{"trailing garbage", append(append([]byte(nil), good...), 1, 2, 3)},
		{"keys not ascending", mut(func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[12+4+8+4+6:], 0)
			return b
		})},
		{"negative key", mut(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[12:], 1<<31); return b })},
		{"key beyond any data file", mut(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[12:], 0xcf0000); return b })},
		{"bad roaring cookie", mut(func(b []byte) []byte { b[16] = 0x11; return b })},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := deltadv.DecodeBitmap(tc.data); err == nil {
				t.Fatal("expected an error")
			} else if !errors.Is(err, deltadv.ErrCorruptBitmap) {
				t.Fatalf("error %v does not wrap ErrCorruptBitmap", err)
			}
		})
	}
}

func TestWriteDVThenReadDV(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tb := openTestTable(t, dir)
	bitmaps := []*roaring64.Bitmap{
		roaring64.BitmapOf(0, 9),
		roaring64.BitmapOf(rangeRows(100, 5000)...),
		roaring64.BitmapOf(1, 1<<32|5),
	}
	for _, prefix := range []string{"", "ab"} {
		dvs, err := WriteDV(ctx, tb, prefix, bitmaps)
		if err != nil {
			t.Fatal(err)
		}
		if len(dvs) != len(bitmaps) {
			t.Fatalf("%d descriptors", len(dvs))
		}
		wantOff := int32(1)
		for i, dv := range dvs {
			if dv.StorageType != "u" || len(dv.PathOrInlineDv) != len(prefix)+20 || !strings.HasPrefix(dv.PathOrInlineDv, prefix) {
				t.Fatalf("descriptor %d: %+v", i, dv)
			}
			if dv.Offset == nil || *dv.Offset != wantOff {
				t.Fatalf("descriptor %d offset %v, want %d", i, dv.Offset, wantOff)
			}
			wantOff += dv.SizeInBytes + 8
			if dv.Cardinality != int64(bitmaps[i].GetCardinality()) {
				t.Fatalf("descriptor %d cardinality %d", i, dv.Cardinality)
			}
			got, err := ReadDV(ctx, tb, dv)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Equals(bitmaps[i]) {
				t.Fatalf("bitmap %d read back differently", i)
			}
		}
		key, _ := deltadv.DVFileKey(dvs[0].PathOrInlineDv)
		if prefix != "" && !strings.HasPrefix(key, prefix+"/deletion_vector_") {
			t.Fatalf("key %q", key)
		}
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(key)))
		if err != nil {
			t.Fatal(err)
		}
		if int32(len(data)) != wantOff {
			t.Fatalf("file has %d bytes, want %d", len(data), wantOff)
		}
		frames, err := parseDVFile(data)
		if err != nil || len(frames) != 3 {
			t.Fatalf("parse written file: %d frames, %v", len(frames), err)
		}
	}
	// Two writes never share a file name.
	a, _ := WriteDV(ctx, tb, "", bitmaps[:1])
	b, _ := WriteDV(ctx, tb, "", bitmaps[:1])
	if a[0].PathOrInlineDv == b[0].PathOrInlineDv {
		t.Fatal("two writes produced the same DV file")
	}
	if _, err := WriteDV(ctx, tb, "", []*roaring64.Bitmap{roaring64.New()}); err == nil {
		t.Fatal("empty bitmap accepted")
	}
	if _, err := WriteDV(ctx, tb, "a/b", bitmaps); err == nil {
		t.Fatal("prefix with a slash accepted")
	}
}

func TestReadDVAbsolutePathDescriptor(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tb := openTestTable(t, dir)
	dvs, err := WriteDV(ctx, tb, "", []*roaring64.Bitmap{roaring64.BitmapOf(4, 6)})
	if err != nil {
		t.Fatal(err)
	}
	key, _ := deltadv.DVFileKey(dvs[0].PathOrInlineDv)
	p := *dvs[0]
	p.StorageType = "p"
	p.PathOrInlineDv = "file://" + actions.EncodePath(filepath.ToSlash(filepath.Join(dir, key)))
	got, err := ReadDV(ctx, tb, &p)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equals(roaring64.BitmapOf(4, 6)) {
		t.Fatalf("got %v", got.ToArray())
	}
	// Dot segments and escapes are resolved before the root check: a path
	// that leaves the root and comes back is inside it.
	back := p
	back.PathOrInlineDv = "file://" + actions.EncodePath(filepath.ToSlash(dir)) + "/sub/%2e%2e/../" + filepath.Base(dir) + "/" + key
	if got, err = ReadDV(ctx, tb, &back); err != nil || got.GetCardinality() != 2 {
		t.Fatalf("inside the root through dot segments: %v %v", got, err)
	}
	// The same file seen from another table is outside its root: refused
	// as a corrupt deletion vector, never opened.
	other := openTestTable(t, t.TempDir())
	_, err = ReadDV(ctx, other, &p)
	var cf *failure.CorruptFileError
	if !errors.Is(err, ErrDVOutsideRoot) || !errors.As(err, &cf) || cf.Kind != failure.DeletionVector {
		t.Fatalf("outside the table: %v, want a corrupt deletion vector outside the root", err)
	}
	if !strings.Contains(err.Error(), "deletion vector path outside the table root; not read") || !strings.Contains(err.Error(), p.PathOrInlineDv) {
		t.Fatalf("error does not say why or name the descriptor: %v", err)
	}
	// Unless the operator allows its directory.
	allowed, err := OpenTableWith(ctx, other.URL, OpenOptions{AllowedExternalPrefixes: []string{"file://" + filepath.ToSlash(dir) + "/"}})
	if err != nil {
		t.Fatal(err)
	}
	defer allowed.Close()
	if got, err = ReadDV(ctx, allowed, &p); err != nil || got.GetCardinality() != 2 {
		t.Fatalf("outside the table, under an allowed prefix: %v %v", got, err)
	}
}

// TestReadDVAbsolutePathStaysInsideTheRoot tries the spellings of a `p`
// descriptor that name a file outside the table root (a sentinel beside
// it): each is refused before it is opened, whatever the file holds.
func TestReadDVAbsolutePathStaysInsideTheRoot(t *testing.T) {
	ctx := context.Background()
	parent := t.TempDir()
	dir := filepath.Join(parent, "table")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tb := openTestTable(t, dir)
	// A valid DV file outside the root: were it read, ReadDV would succeed.
	outside := openTestTable(t, parent)
	dvs, err := WriteDV(ctx, outside, "", []*roaring64.Bitmap{roaring64.BitmapOf(1)})
	if err != nil {
		t.Fatal(err)
	}
	key, _ := deltadv.DVFileKey(dvs[0].PathOrInlineDv)
	if err := os.Rename(filepath.Join(parent, key), filepath.Join(parent, "sentinel")); err != nil {
		t.Fatal(err)
	}
	root := filepath.ToSlash(dir)
	for _, path := range []string{
		"file://" + filepath.ToSlash(parent) + "/sentinel",
		"file:" + filepath.ToSlash(parent) + "/sentinel",
		"file://localhost" + filepath.ToSlash(parent) + "/sentinel",
		"file://" + root + "/../sentinel",
		"file://" + root + "/%2e%2e/sentinel",
		"file://" + root + "/%2E%2E%2Fsentinel",
		"file://" + root + "/a/../../sentinel",
		"file://" + root + "sentinel", // a sibling named table<x>, not a child
		"FILE://" + root + "/../sentinel",
		"s3://bucket" + root + "/../sentinel",
		"s3a://other/sentinel",
		"gs://other/sentinel",
		"mem://other/sentinel",
	} {
		d := *dvs[0]
		d.StorageType, d.PathOrInlineDv = "p", path
		_, err := ReadDV(ctx, tb, &d)
		if !errors.Is(err, ErrDVOutsideRoot) {
			t.Errorf("p %s: %v, want the path refused as outside the root", path, err)
		}
	}
	// A relative (`u`) path whose prefix climbs out is refused too.
	d := *dvs[0]
	d.PathOrInlineDv = "../" + dvs[0].PathOrInlineDv
	if _, err := ReadDV(ctx, tb, &d); !errors.Is(err, ErrDVOutsideRoot) {
		t.Errorf("u %s: %v, want the path refused as outside the root", d.PathOrInlineDv, err)
	}
}

func TestParseLocationCanonicalizes(t *testing.T) {
	for _, c := range []struct {
		in, want string
		bad      bool
	}{
		{in: "s3a://b/t/x", want: "s3://b/t/x"},
		{in: "S3N://b/t/./y/../x", want: "s3://b/t/x"},
		{in: "s3://b", want: "s3://b/"},
		{in: "file:/t/%2e%2e/etc/passwd", want: "file:///etc/passwd"},
		{in: "file://localhost/t/a%20b", want: "file:///t/a%20b"},
		{in: "file://host/t", bad: true},
		{in: "file:t/x", bad: true},
		{in: "/t/x", bad: true},
		{in: "file:///t/%zz", bad: true},
	} {
		got, err := parseLocation(c.in)
		if c.bad {
			if err == nil {
				t.Errorf("parseLocation(%q) = %v, want an error", c.in, got)
			}
			continue
		}
		if err != nil || got.String() != c.want {
			t.Errorf("parseLocation(%q) = %v, %v, want %s", c.in, got, err, c.want)
		}
	}
}

func TestReadDVCorruptFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tb := openTestTable(t, dir)
	dvs, err := WriteDV(ctx, tb, "", []*roaring64.Bitmap{roaring64.BitmapOf(1, 2, 3), roaring64.BitmapOf(7)})
	if err != nil {
		t.Fatal(err)
	}
	key, _ := deltadv.DVFileKey(dvs[0].PathOrInlineDv)
	path := filepath.Join(dir, key)
	orig, _ := os.ReadFile(path)
	withFile := func(t *testing.T, data []byte) {
		t.Helper()
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.WriteFile(path, orig, 0o644) })
	}
	clone := func() []byte { return append([]byte(nil), orig...) }
	off2 := int(*dvs[1].Offset)
	tests := []struct {
		name    string
		file    []byte
		dv      *actions.DeletionVector
		wantErr string
	}{
		{"checksum mismatch", func() []byte { b := clone(); b[1+4+20] ^= 1; return b }(), nil, "checksum mismatch"},
		{"corrupt stored checksum", func() []byte { b := clone(); b[off2-1] ^= 1; return b }(), nil, "checksum mismatch"},
		{"truncated file", orig[:20], nil, "truncated"},
		{"truncated second DV", orig[:len(orig)-2], dvs[1], "truncated"},
		{"bad version byte", func() []byte { b := clone(); b[0] = 2; return b }(), nil, "bad format version byte"},
		{"size field differs from descriptor", nil, func() *actions.DeletionVector { d := *dvs[0]; d.SizeInBytes += 2; return &d }(), "size field does not match the descriptor's sizeInBytes"},
		{"cardinality differs from descriptor", nil, func() *actions.DeletionVector { d := *dvs[0]; d.Cardinality = 4; return &d }(), "the bitmap's cardinality does not match the descriptor's cardinality (4)"},
		{"offset points into the middle", nil, func() *actions.DeletionVector { d := *dvs[0]; o := int32(3); d.Offset = &o; return &d }(), ""},
		{"bad magic under a valid crc", func() []byte {
			b := clone()
			b[5] ^= 0xff
			binary.BigEndian.PutUint32(b[5+int(dvs[0].SizeInBytes):], crc32IEEE(b[5:5+int(dvs[0].SizeInBytes)]))
			return b
		}(), nil, "magic"},
		{"missing file", nil, func() *actions.DeletionVector {
			d := *dvs[0]
			d.PathOrInlineDv = deltadv.Z85Encode(make([]byte, 16))
			return &d
		}(), "deletion_vector_00000000-0000-0000-0000-000000000000.bin"},
		{"unknown storage type", nil, func() *actions.DeletionVector { d := *dvs[0]; d.StorageType = "r"; return &d }(), "storage type"},
		{"inline with bad z85", nil, func() *actions.DeletionVector {
			return &actions.DeletionVector{StorageType: "i", PathOrInlineDv: "abc~~", SizeInBytes: 4, Cardinality: 1}
		}(), "invalid character"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.file != nil {
				withFile(t, tc.file)
			}
			dv := dvs[0]
			if tc.dv != nil {
				dv = tc.dv
			}
			_, err := ReadDV(ctx, tb, dv)
			if err == nil {
				t.Fatal("expected an error")
			}
			if !strings.Contains(err.Error(), tb.URL) {
				t.Errorf("error does not name the table: %v", err)
			}
			if tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %q does not mention %q", err, tc.wantErr)
			}
			if dv.StorageType == "u" && tc.name != "missing file" && !strings.Contains(err.Error(), key) {
				t.Errorf("error does not name the DV file %s: %v", key, err)
			}
		})
	}
}

func TestDVRowIndexCheck(t *testing.T) {
	tests := []struct {
		name    string
		rows    []uint64
		numRows int64
		ok      bool
	}{
		{"no DV", nil, 0, true},
		{"last row deleted", []uint64{0, 9}, 10, true},
		{"row at the row count", []uint64{10}, 10, false},
		{"row far past the file", []uint64{3, 28168}, 10, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := DVRowIndexCheck(roaring64.BitmapOf(tc.rows...), tc.numRows)
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

func TestReadDVHugeSizeIsRefusedWithoutAllocating(t *testing.T) {
	ctx := context.Background()
	tb := openTestTable(t, t.TempDir())
	dvs, err := WriteDV(ctx, tb, "", []*roaring64.Bitmap{roaring64.BitmapOf(1)})
	if err != nil {
		t.Fatal(err)
	}
	d := *dvs[0]
	d.SizeInBytes = 1<<31 - 1
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	bm, err := ReadDV(ctx, tb, &d)
	runtime.ReadMemStats(&after)
	if err == nil || bm != nil || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("got %v, %v", bm, err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Fatalf("allocated %d bytes for a corrupt size", grew)
	}
	if _, err := ReadDV(ctx, nil, dvs[0]); err == nil {
		t.Fatal("nil table accepted")
	}
}
