//go:build !unix

package logstore

import "errors"

// lockFile is not available off unix: local leases need flock(2).
func lockFile(path string) (unlock func() error, err error) {
	return nil, errors.New("local lease locking needs flock(2), available only on unix")
}
