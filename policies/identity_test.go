package policies

import "testing"

func TestTwoSpellingsOfOneTableHaveOneIdentity(t *testing.T) {
	same := [][]string{
		{"file:///data/t", "/data/t/", "/data/t", "file:///data/t/", "file://localhost/data/t", "/data/./t", "/data/x/../t", "//data//t", "file:///data/%74"},
		{"s3://b/p", "s3://b/p/", "s3a://b/p", "s3n://b/p/", "S3://B/p", "s3://user:pass@b/p", "s3://b/p?region=eu-west-1&secret_key=x"},
		{"s3://b//p/./q", "s3://b/p/q", "s3://b/p/q//", "s3://b/p/x/../q", "s3://b/p%2Fq"},
		{"s3://b/p?endpoint=http://minio:9000", "s3a://b/p/?use_path_style=true&endpoint=http://MINIO:9000/"},
		{"azblob://c/t?sig=1&se=2", "azblob://c/t/"},
		{"s3://b", "s3://b/", "s3://b//"},
	}
	for _, group := range same {
		want := TableIdentity(group[0])
		for _, u := range group[1:] {
			if got := TableIdentity(u); got != want {
				t.Errorf("TableIdentity(%q) = %q, want %q (as %q)", u, got, want, group[0])
			}
		}
	}
	different := [][2]string{
		{"s3://b/p", "s3://b/q"},
		{"s3://b/p", "s3://c/p"},
		{"s3://b/p", "gs://b/p"},
		{"s3://b/P", "s3://b/p"},
		{"s3://b/p", "s3://b/p/q"},
		{"s3://b/p?endpoint=http://minio-a:9000", "s3://b/p?endpoint=http://minio-b:9000"},
		{"s3://b/p?endpoint=http://minio-a:9000", "s3://b/p"},
		{"file:///data/t", "s3://data/t"},
		{"mem://a", "mem://b"},
	}
	for _, d := range different {
		if a, b := TableIdentity(d[0]), TableIdentity(d[1]); a == b {
			t.Errorf("%q and %q have one identity %q", d[0], d[1], a)
		}
	}
	for _, c := range [][2]string{
		{"/data/t/", "file:///data/t"},
		{"s3a://User:Pw@Bucket/a//b/./c/?Region=x&endpoint=HTTP://H:1/", "s3://bucket/a/b/c?endpoint=http%3A%2F%2Fh%3A1"},
		{"s3://b/", "s3://b"},
	} {
		if got := TableIdentity(c[0]); got != c[1] {
			t.Errorf("TableIdentity(%q) = %q, want %q", c[0], got, c[1])
		}
	}
}
