package inspect

import (
	"strings"

	"github.com/compactord/compactord/delta/actions"
)

// ShowNulls shows the null values of a "col=value/..." partition as
// null, as the inspect report and the table page do (retention names them by Hive's
// directory name, __HIVE_DEFAULT_PARTITION__).
func ShowNulls(partition string) string {
	parts := strings.Split(partition, "/")
	for i, p := range parts {
		if col, v, ok := strings.Cut(p, "="); ok && v == actions.HiveDefaultPartition {
			parts[i] = col + "=null"
		}
	}
	return strings.Join(parts, "/")
}
