package objstore

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"
	"gocloud.dev/gcerrors"
)

// TestGuardRefusesSymlinks: through a guarded fileblob bucket no read,
// write, listing or delete follows a link out of the directory.
func TestGuardRefusesSymlinks(t *testing.T) {
	ctx := context.Background()
	root, outside := t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("outside"), 0o600); err != nil {
		t.Fatal(err)
	}
	must(t, os.Symlink(outside, filepath.Join(root, "dir")))
	must(t, os.Symlink(secret, filepath.Join(root, "file.txt")))
	must(t, os.WriteFile(filepath.Join(root, "own.txt"), []byte("inside"), 0o600))
	fb, err := fileblob.OpenBucket(root, nil)
	must(t, err)
	b := Guard(fb, NoSymlinks(root))
	defer b.Close()

	for _, k := range []string{"dir/secret.txt", "file.txt"} {
		if _, err := b.ReadAll(ctx, k); !errors.Is(err, ErrSymlink) || gcerrors.Code(err) != gcerrors.PermissionDenied {
			t.Errorf("ReadAll(%q) = %v, want a PermissionDenied wrapping ErrSymlink", k, err)
		}
		if err := b.Delete(ctx, k); !errors.Is(err, ErrSymlink) {
			t.Errorf("Delete(%q) = %v, want ErrSymlink", k, err)
		}
	}
	if err := b.WriteAll(ctx, "dir/new.txt", []byte("x"), nil); !errors.Is(err, ErrSymlink) {
		t.Errorf("WriteAll(dir/new.txt) = %v, want ErrSymlink", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "new.txt")); !os.IsNotExist(err) {
		t.Errorf("a write went through the link: %v", err)
	}
	if _, err := os.Stat(secret); err != nil {
		t.Fatalf("the file outside is gone: %v", err)
	}
	var listed []string
	it := b.List(&blob.ListOptions{})
	for {
		o, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		must(t, err)
		listed = append(listed, o.Key)
	}
	if len(listed) != 1 || listed[0] != "own.txt" {
		t.Errorf("listed %q, want only own.txt", listed)
	}
	if got, err := b.ReadAll(ctx, "own.txt"); err != nil || string(got) != "inside" {
		t.Errorf("ReadAll(own.txt) = %q, %v", got, err)
	}
	if err := b.WriteAll(ctx, "sub/new.txt", []byte("y"), nil); err != nil {
		t.Errorf("WriteAll(sub/new.txt) = %v", err)
	}
	for _, k := range []string{"a\nb", "x__0x2f__y", "a//b", "../x"} {
		if _, err := b.ReadAll(ctx, k); !errors.Is(err, ErrUnsafeLocalKey) {
			t.Errorf("ReadAll(%q) = %v, want ErrUnsafeLocalKey", k, err)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
