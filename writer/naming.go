package writer

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/google/uuid"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	deltaprops "github.com/compactord/compactord/delta/props"
)

// hiveDefaultPartition names the directory of a null (or empty) partition value.
const hiveDefaultPartition = "__HIVE_DEFAULT_PARTITION__"

// layout decides where a job's outputs go under the table root.
type layout struct {
	// dir is the partition directory ("a=1/b=x/") or "" (unpartitioned, or
	// random prefixes, which are drawn per file).
	dir string
	// randomPrefixLen > 0 draws a random alphanumeric directory per file.
	randomPrefixLen int
	// codecExt is the codec infix of file names (".zstd", ".snappy", ".gz", "").
	codecExt string
}

// newLayout computes the output layout of a job's partition.
func newLayout(snap *delta.Snapshot, partitionValues map[string]*string, codecExt string) (layout, error) {
	l := layout{codecExt: codecExt}
	props := snap.Properties()
	if err := props.Check(deltaprops.PropRandomizeFilePrefixes, deltaprops.PropRandomPrefixLength); err != nil {
		return layout{}, err
	}
	if props.RandomizeFilePrefixes {
		l.randomPrefixLen = props.RandomPrefixLength
		return l, nil
	}
	cols, err := actions.PartitionValueKeys(&snap.Metadata, snap.Schema)
	if err != nil {
		return layout{}, err
	}
	var b strings.Builder
	for _, col := range cols {
		v, ok := partitionValues[col]
		if !ok {
			return layout{}, fmt.Errorf("partition column %q has no value in the job's partition values", col)
		}
		b.WriteString(partitionDirFragment(col, v))
		b.WriteByte('/')
	}
	l.dir = b.String()
	return l, nil
}

// key returns the object key (relative to the table root, not URL-encoded)
// of output number idx.
func (l layout) key(idx int) string {
	name := fmt.Sprintf("part-%05d-%s.c000%s.parquet", idx, uuid.NewString(), l.codecExt)
	if l.randomPrefixLen > 0 {
		return randomPrefix(l.randomPrefixLen) + "/" + name
	}
	return l.dir + name
}

// partitionDirFragment is Hive's "col=value" directory name, both sides
// escaped as Spark's ExternalCatalogUtils.escapePathName does; null and the
// empty string map to __HIVE_DEFAULT_PARTITION__.
func partitionDirFragment(col string, value *string) string {
	v := hiveDefaultPartition
	if value != nil && *value != "" {
		v = escapePathName(*value)
	}
	return escapePathName(col) + "=" + v
}

// escapePathName percent-escapes (upper-case hex) the characters Spark
// escapes in partition directory names: ASCII control characters, DEL and
// " # % ' * / : = ? \ { [ ] ^. Everything else (including spaces and
// non-ASCII) is kept as is.
func escapePathName(s string) string {
	var b strings.Builder
	for _, r := range s {
		if needsEscaping(r) {
			fmt.Fprintf(&b, "%%%02X", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func needsEscaping(r rune) bool {
	if r >= 0x01 && r <= 0x1F || r == 0x7F {
		return true
	}
	switch r {
	case '"', '#', '%', '\'', '*', '/', ':', '=', '?', '\\', '{', '[', ']', '^':
		return true
	}
	return false
}

const alphanumeric = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// randomPrefix draws n alphanumeric characters, as Delta's random file
// prefixes are.
func randomPrefix(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphanumeric[rand.IntN(len(alphanumeric))]
	}
	return string(b)
}
