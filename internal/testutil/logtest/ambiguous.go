package logtest

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/compactord/compactord/delta/logstore"
	"github.com/compactord/compactord/objstore"
)

// AmbiguousLog is a log store whose put number At (1-based) has an unknown
// outcome, as over a connection that broke after sending: it lands that
// put in Inner first when Land is set, and answers with an error wrapping
// objstore.ErrAmbiguous. Every other put goes to Inner.
type AmbiguousLog struct {
	Inner logstore.LogStore
	Land  bool
	At    int32
	puts  atomic.Int32
}

var _ logstore.LogStore = (*AmbiguousLog)(nil)

// PutIfAbsent implements logstore.LogStore.
func (a *AmbiguousLog) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	if a.puts.Add(1) != a.At {
		return a.Inner.PutIfAbsent(ctx, key, data)
	}
	if a.Land {
		if err := a.Inner.PutIfAbsent(ctx, key, data); err != nil {
			return err
		}
	}
	return fmt.Errorf("connection reset after sending: %w", objstore.ErrAmbiguous)
}

// Puts is how many puts the store was asked for so far.
func (a *AmbiguousLog) Puts() int32 { return a.puts.Load() }
