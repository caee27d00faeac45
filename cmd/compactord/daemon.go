package main

import (
	"context"
	"fmt"
	"io"
)

func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return fmt.Errorf("not implemented yet")
}

func runDaemon(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return fmt.Errorf("not implemented yet")
}

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return fmt.Errorf("not implemented yet")
}
