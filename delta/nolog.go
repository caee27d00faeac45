package delta

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"

	"gocloud.dev/blob"

	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/delta/logstore"
	"github.com/compactord/compactord/internal/redact"
)

// NoCommitsError looks into at most maxSubdirsChecked subdirectories for
// a _delta_log and names at most maxTableHints tables.
const (
	maxSubdirsChecked = 20
	maxTableHints     = 3
)

// NoCommitsError is the error of a table whose log lists no commit and no
// checkpoint. It says why where it can: a local _delta_log that cannot be
// read fails with the system's reason (a local listing skips what it
// cannot read, so an unreadable log lists empty), which wraps the
// os.PathError; otherwise the error wraps logpath.ErrVersionNotFound and, when the
// URL is a table's _delta_log itself or a directory whose subdirectories
// hold tables, asks "did you mean" with the table URLs.
func NoCommitsError(ctx context.Context, t *Table) error {
	if l, ok := t.Log.(*logstore.Local); ok {
		dir := filepath.Join(l.Dir(), filepath.FromSlash(logpath.LogDir))
		if _, err := os.ReadDir(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("table %s: cannot read %s: %w", t.Name(), logpath.LogDir, err)
		}
	}
	msg := fmt.Sprintf("table %s: no commits or checkpoints in %s", t.Name(), logpath.LogDir)
	if hint := tableHint(ctx, t); hint != "" {
		return fmt.Errorf("%s (not a Delta table: %s): %w", msg, hint, logpath.ErrVersionNotFound)
	}
	return fmt.Errorf("%s (not a Delta table?): %w", msg, logpath.ErrVersionNotFound)
}

// tableHint names the table(s) the user probably meant: the parent of a
// URL that ends in _delta_log, or subdirectories of the root that hold a
// _delta_log. "" when it finds none.
func tableHint(ctx context.Context, t *Table) string {
	u, err := url.Parse(t.URL)
	if err != nil {
		return ""
	}
	clean := strings.TrimSuffix(u.Path, "/")
	if path.Base(clean) == strings.TrimSuffix(logpath.LogDir, "/") {
		p := *u
		p.Path = path.Dir(clean)
		return fmt.Sprintf("this is a table's log; did you mean %s?", redact.URL(p.String()))
	}
	var subs []string
	err = List(ctx, t.Bucket, &blob.ListOptions{Delimiter: "/"}, func() { subs = nil }, func(obj *blob.ListObject) {
		if obj.IsDir && len(subs) < maxSubdirsChecked && obj.Key != logpath.LogDir {
			subs = append(subs, obj.Key)
		}
	})
	if err != nil {
		return ""
	}
	var tables []string
	for _, sub := range subs {
		if len(tables) == maxTableHints || ctx.Err() != nil {
			break
		}
		if hasLog(ctx, t.Bucket, sub+logpath.LogDir) {
			p := *u
			p.Path = path.Join(clean, sub)
			tables = append(tables, redact.URL(p.String()))
		}
	}
	switch len(tables) {
	case 0:
		return ""
	case 1:
		return "a table is under it; did you mean " + tables[0] + "?"
	}
	return "tables are under it; did you mean one of " + strings.Join(tables, ", ") + "?"
}

// hasLog reports whether anything is stored under prefix.
func hasLog(ctx context.Context, b *blob.Bucket, prefix string) bool {
	it := b.List(&blob.ListOptions{Prefix: prefix})
	_, err := it.Next(ctx)
	return err == nil
}
