package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// testPauseEnv is a test-only hook of run-unit: "INDEX:DIR" makes the first
// attempt of unit INDEX write its pid to DIR/unit-INDEX.pid once its
// outputs are written and then wait, before its result manifest, until it
// is killed (the acceptance test SIGKILLs it there). A later attempt finds
// the file and goes on. Nothing else reads it.
const testPauseEnv = "COMPACTORD_TEST_PAUSE_BEFORE_MANIFEST"

// testPause is the BeforeManifest hook of testPauseEnv.
func testPause(hook string, index int) func(context.Context) error {
	at, dir, ok := strings.Cut(hook, ":")
	if !ok || at != strconv.Itoa(index) {
		return nil
	}
	return func(ctx context.Context) error {
		f, err := os.OpenFile(filepath.Join(dir, "unit-"+at+".pid"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, os.ErrExist) {
			return nil // a later attempt
		}
		if err != nil {
			return err
		}
		_, err = fmt.Fprint(f, os.Getpid())
		if err := errors.Join(err, f.Close()); err != nil {
			return err
		}
		<-ctx.Done()
		return ctx.Err()
	}
}
