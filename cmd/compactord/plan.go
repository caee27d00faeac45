package main

import (
	"context"
	"fmt"
	"io"
)

func runPlan(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return fmt.Errorf("not implemented yet")
}

func runRunPlan(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return fmt.Errorf("not implemented yet")
}

func runCompact(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return fmt.Errorf("not implemented yet")
}
