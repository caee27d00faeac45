package main

import (
	"context"
	"fmt"
	"io"
)

func runInspect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return fmt.Errorf("not implemented yet")
}
