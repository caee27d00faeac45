package main

import (
	"context"
	"fmt"
	"io"
)

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return fmt.Errorf("demo: not implemented yet")
}
