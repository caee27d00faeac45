package main

import (
	"fmt"
)

// Small formatting helpers the commands' text output shares.

// plural is n and noun, with an s unless n is 1: "1 job", "2 jobs".
func plural[N ~int | ~int64](n N, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
