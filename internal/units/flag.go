package units

import (
	"errors"
	"time"
)

// DurationFlag is a flag.Value holding a duration in the policy syntax
// (30s, 5m, 2h, 7d; ParseDuration), so that the command line and policy
// files agree. A negative duration is refused.
type DurationFlag struct{ D *time.Duration }

// String is the duration as Go prints it, "" when unset or zero.
func (f DurationFlag) String() string {
	if f.D == nil || *f.D == 0 {
		return ""
	}
	return f.D.String()
}

// Set parses s with ParseDuration.
func (f DurationFlag) Set(s string) error {
	d, err := ParseDuration(s)
	if err != nil {
		return err
	}
	if d < 0 {
		return errors.New("negative duration")
	}
	*f.D = d
	return nil
}
