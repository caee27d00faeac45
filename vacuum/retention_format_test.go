package vacuum

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// The refusal of a short retention writes durations as the policies and
// flags do ("7d", "1h"), not as Go's "168h0m0s".
func TestAShortRetentionIsRefusedInDays(t *testing.T) {
	err := checkRetention(time.Hour, 7*24*time.Hour, false)
	if !errors.Is(err, ErrRetentionTooShort) {
		t.Fatalf("err = %v, want ErrRetentionTooShort", err)
	}
	if s := err.Error(); !strings.Contains(s, "asked for 1h, the table keeps tombstones for 7d") || strings.Contains(s, "h0m0s") {
		t.Errorf("refusal %q, want its durations as 1h and 7d", s)
	}
}
