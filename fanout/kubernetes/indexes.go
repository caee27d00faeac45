package kubernetes

import (
	"fmt"
	"strconv"
	"strings"
)

// parseIndexes reads the index sets of a Job's status (completedIndexes,
// failedIndexes): comma-separated indexes and inclusive ranges in
// increasing order, such as "1,3-5,7". Every index must be below n (the
// Job's completions). The empty string is the empty set.
func parseIndexes(s string, n int) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var out []int
	next := 0 // the smallest index the next interval may start at
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		first, err := parseIndex(lo)
		if err != nil {
			return nil, fmt.Errorf("index set %q: %w", s, err)
		}
		last := first
		if isRange {
			if last, err = parseIndex(hi); err != nil {
				return nil, fmt.Errorf("index set %q: %w", s, err)
			}
			if last <= first {
				return nil, fmt.Errorf("index set %q: range %q does not increase", s, part)
			}
		}
		if first < next {
			return nil, fmt.Errorf("index set %q: %q is not above the interval before it", s, part)
		}
		if last >= n {
			return nil, fmt.Errorf("index set %q: index %d is not below the Job's %d completions", s, last, n)
		}
		for i := first; i <= last; i++ {
			out = append(out, i)
		}
		next = last + 1
	}
	return out, nil
}

// parseIndex reads one non-negative decimal index.
func parseIndex(s string) (int, error) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not an index", s)
	}
	i, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not an index: %w", s, err)
	}
	return i, nil
}
