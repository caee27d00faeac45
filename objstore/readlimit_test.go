package objstore

import (
	"context"
	"errors"
	"testing"

	"gocloud.dev/blob/memblob"
)

func TestReadAllLimitRefusesAnObjectOverItsLimit(t *testing.T) {
	ctx := context.Background()
	b := memblob.OpenBucket(nil)
	defer b.Close()
	must(t, b.WriteAll(ctx, "small", []byte("0123456789"), nil))
	if got, err := ReadAllLimit(ctx, b, "small", 10); err != nil || string(got) != "0123456789" {
		t.Fatalf("ReadAllLimit(small, 10) = %q, %v", got, err)
	}
	if _, err := ReadAllLimit(ctx, b, "small", 9); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("ReadAllLimit(small, 9) = %v, want ErrTooLarge", err)
	}
}
