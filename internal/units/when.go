package units

import "time"

// TimeLayout is the one way a time is written for people: the page, the
// reasons /status and the log show (a hold's "eligible at", a cutoff) and
// the command output, always in UTC ("2026-01-10 12:05:00Z").
const TimeLayout = "2006-01-02 15:04:05Z"

// FormatTime writes t in UTC with TimeLayout.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeLayout) }
