package schema

import (
	"reflect"
	"testing"
)

func TestColumnPathsParseAndFormat(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"ts", []string{"ts"}},
		{"a.b.c", []string{"a", "b", "c"}},
		{"`id.num`", []string{"id.num"}},
		{"meta.`zip.code`", []string{"meta", "zip.code"}},
		{"`a``b`.c", []string{"a`b", "c"}},
		{"Event Time", []string{"Event Time"}},
	} {
		got, err := ParseColumnPath(tc.in)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseColumnPath(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			continue
		}
		back, err := ParseColumnPath(FormatColumnPath(got))
		if err != nil || !reflect.DeepEqual(back, got) {
			t.Errorf("round trip of %q through %q: %q, %v", tc.in, FormatColumnPath(got), back, err)
		}
	}
	for _, bad := range []string{"", " ", "a..b", ".a", "a.", "`a", "`a`b", "a.`b"} {
		if got, err := ParseColumnPath(bad); err == nil {
			t.Errorf("ParseColumnPath(%q) = %q, want an error", bad, got)
		}
	}
}
