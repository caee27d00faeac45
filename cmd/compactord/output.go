package main

import (
	"fmt"
	"strings"

	"github.com/compactord/compactord/delta"
)

// Small formatting helpers the commands' text output shares.

// plural is n and noun, with an s unless n is 1: "1 job", "2 jobs".
func plural[N ~int | ~int64](n N, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// nullPartitions shows the null values of a "col=value/..." partition as
// null, as inspect and the table page do (retention names them by Hive's
// directory name, __HIVE_DEFAULT_PARTITION__).
func nullPartitions(partition string) string {
	parts := strings.Split(partition, "/")
	for i, p := range parts {
		if col, v, ok := strings.Cut(p, "="); ok && v == delta.HiveDefaultPartition {
			parts[i] = col + "=null"
		}
	}
	return strings.Join(parts, "/")
}
