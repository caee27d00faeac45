package main

import (
	"context"
	"fmt"
	"io"
)

func runExpire(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return fmt.Errorf("not implemented yet")
}
