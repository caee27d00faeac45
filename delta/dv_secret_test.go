package delta

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/compactord/compactord/delta/actions"
	deltadv "github.com/compactord/compactord/delta/dv"
)

// secretForms are the ways an error could echo the bytes of secret: every
// 4-character run as text, and every 4-byte word of it (and its CRC32) in
// decimal and hex, big- and little-endian, signed and unsigned, plus the
// 8-byte words the portable bitmap layout reads as a bucket count.
func secretForms(secret []byte) []string {
	var forms []string
	add32 := func(v uint32) {
		forms = append(forms, fmt.Sprint(v), fmt.Sprint(int32(v)), fmt.Sprintf("%08x", v), fmt.Sprintf("%08X", v), fmt.Sprintf("%x", v))
	}
	for i := 0; i+4 <= len(secret); i++ {
		w := secret[i : i+4]
		forms = append(forms, string(w))
		add32(binary.BigEndian.Uint32(w))
		add32(binary.LittleEndian.Uint32(w))
		add32(crc32.ChecksumIEEE(secret[i:]))
	}
	for i := 0; i+8 <= len(secret); i++ {
		forms = append(forms, fmt.Sprint(binary.LittleEndian.Uint64(secret[i:])), fmt.Sprint(binary.BigEndian.Uint64(secret[i:])))
	}
	return forms
}

// echoed returns the forms of secret that msg contains once the names
// known to appear in it (the table root) are taken out.
func echoed(msg string, secret []byte, known ...string) []string {
	for _, k := range known {
		msg = strings.ReplaceAll(msg, k, "")
	}
	var found []string
	for _, f := range secretForms(secret) {
		if strings.Contains(msg, f) {
			found = append(found, f)
		}
	}
	return found
}

// TestReadDVErrorsNeverEchoTheBytesRead points `p` descriptors at a file
// of the table holding a known secret, at offsets and sizes that reach
// each check of the DV framing and of the bitmap decoder: every read
// fails, and no error carries any form of the bytes it read.
func TestReadDVErrorsNeverEchoTheBytesRead(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tb := openTestTable(t, dir)
	secret := []byte("SECRET42SECRET42SECRET42SECRET42")
	frame := func(body []byte, crc uint32) []byte {
		b := []byte{dvFormatVersion}
		b = binary.BigEndian.AppendUint32(b, uint32(len(body)))
		b = append(b, body...)
		return binary.BigEndian.AppendUint32(b, crc)
	}
	portable := binary.LittleEndian.AppendUint32(nil, deltadv.BitmapMagicPortable)
	for _, c := range []struct {
		name   string
		file   []byte
		offset int32
		size   int32
		want   string
		also   []string // forms of single bytes the check reads
	}{
		{"version byte", secret, 1, 8, "bad format version byte", []string{fmt.Sprint(secret[0]), fmt.Sprintf("%x", secret[0])}},
		{"size field", secret, 2, 8, "size field does not match the descriptor's sizeInBytes", nil},
		{"size field at another offset", secret, 13, 8, "size field does not match the descriptor's sizeInBytes", nil},
		{"checksum", frame(secret, binary.BigEndian.Uint32(secret)), 1, int32(len(secret)), "checksum mismatch", nil},
		{"magic number", frame(secret, crc32.ChecksumIEEE(secret)), 1, int32(len(secret)), "bad magic number", nil},
		{"bucket count", frame(append(portable, secret...), crc32.ChecksumIEEE(append(portable, secret...))), 1, int32(4 + len(secret)), "bucket count", nil},
		{"truncated", secret, 5, 600, "truncated", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := os.WriteFile(filepath.Join(dir, "secret.bin"), c.file, 0o644); err != nil {
				t.Fatal(err)
			}
			off := c.offset
			dv := &actions.DeletionVector{StorageType: "p", PathOrInlineDv: tb.URL + "/secret.bin", Offset: &off, SizeInBytes: c.size, Cardinality: 3}
			_, err := ReadDV(ctx, tb, dv)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
			if !strings.Contains(err.Error(), "secret.bin") {
				t.Errorf("error does not name the file: %v", err)
			}
			if found := echoed(err.Error(), secret, tb.URL, dir); len(found) > 0 {
				t.Errorf("error echoes the file's bytes as %q: %v", found, err)
			}
			for _, f := range c.also {
				if msg := strings.ReplaceAll(err.Error(), dir, ""); strings.Contains(msg, f) {
					t.Errorf("error echoes a byte it read as %q: %v", f, err)
				}
			}
			// The same through a data file's add names it too.
			add := &actions.Add{Path: "part-0.parquet", DeletionVector: dv}
			_, err = LoadFileDV(ctx, tb, add, 100)
			if err == nil || !strings.Contains(err.Error(), add.Path) {
				t.Fatalf("LoadFileDV: %v, want an error naming %s", err, add.Path)
			}
			if found := echoed(err.Error(), secret, tb.URL, dir); len(found) > 0 {
				t.Errorf("LoadFileDV error echoes the file's bytes as %q: %v", found, err)
			}
		})
	}
}

// TestDecodeBitmapErrorsNeverEchoTheBytes runs the decoder over
// serializations whose counts, keys and containers are the secret's
// bytes: errors name the part, never its value.
func TestDecodeBitmapErrorsNeverEchoTheBytes(t *testing.T) {
	secret := []byte("SECRET42SECRET42SECRET42SECRET42SECRET42")
	portable := binary.LittleEndian.AppendUint32(nil, deltadv.BitmapMagicPortable)
	native := binary.LittleEndian.AppendUint32(nil, deltadv.BitmapMagicNative)
	one := func(head []byte, rest ...[]byte) []byte {
		b := append([]byte(nil), head...)
		for _, r := range rest {
			b = append(b, r...)
		}
		return b
	}
	le64 := func(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
	le32 := func(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
	for name, data := range map[string][]byte{
		"magic":               secret,
		"portable count":      one(portable, secret),
		"portable key":        one(portable, le64(1), secret),
		"portable container":  one(portable, le64(1), le32(0), secret),
		"native count":        one(native, secret),
		"native length":       one(native, le32(1), secret),
		"native container":    one(native, le32(1), le32(uint32(len(secret))), secret),
		"native short length": one(native, le32(1), le32(12), secret),
	} {
		_, err := deltadv.DecodeBitmap(data)
		if err == nil {
			t.Errorf("%s: decoded", name)
			continue
		}
		if found := echoed(err.Error(), secret); len(found) > 0 {
			t.Errorf("%s: error echoes the bytes as %q: %v", name, found, err)
		}
	}
}
