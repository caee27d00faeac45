package redact

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"unsafe"
)

func TestURLHidesUserinfoAndCredentialParameters(t *testing.T) {
	cases := []struct{ in, want string }{
		{"s3://bucket/path/to/table", "s3://bucket/path/to/table"},
		{"/data/tables/a", "/data/tables/a"},
		{"file:///data/tables/a", "file:///data/tables/a"},
		{"s3://user:pass@bucket/x", "s3://REDACTED@bucket/x"},
		{"s3://onlyuser@bucket/x", "s3://REDACTED@bucket/x"},
		{"s3://user:p%40ss@bucket/x", "s3://REDACTED@bucket/x"},
		{"s3://bucket/x?access_key=AKIAXXXX&secret_key=S3CR3T&region=eu-west-1",
			"s3://bucket/x?access_key=REDACTED&secret_key=REDACTED&region=eu-west-1"},
		{"s3://bucket/x?endpoint=http%3A%2F%2Flocalhost%3A9000&use_path_style=true&session_token=T0K",
			"s3://bucket/x?endpoint=http%3A%2F%2Flocalhost%3A9000&use_path_style=true&session_token=REDACTED"},
		{"azblob://container/t?sv=2022-11-02&se=2030-01-01T00%3A00%3A00Z&sp=rwdl&sig=abc%2Bdef%3D",
			"azblob://container/t?sv=2022-11-02&se=2030-01-01T00%3A00%3A00Z&sp=rwdl&sig=REDACTED"},
		{"s3://b/t?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA%2F2024&X-Amz-Security-Token=tok&X-Amz-Signature=beef",
			"s3://b/t?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=REDACTED&X-Amz-Security-Token=REDACTED&X-Amz-Signature=REDACTED"},
		{"gs://b/t?PASSWORD=x&Account_Key=y&sas=z&apiKey=w&auth=v", "gs://b/t?PASSWORD=REDACTED&Account_Key=REDACTED&sas=REDACTED&apiKey=REDACTED&auth=REDACTED"},
		{"s3://b/t?%73ecret=x", "s3://b/t?%73ecret=REDACTED"},
		{"s3://b/t?sig", "s3://b/t?sig"},
		{"s3://b/t#token=abc&x=1", "s3://b/t#token=REDACTED&x=1"},
		{"mem://user:pass@t?access_key=AKIAXXXX&secret_key=S3CR3T&nomd5", "mem://REDACTED@t?access_key=REDACTED&secret_key=REDACTED&nomd5"},
		// Unparseable: an unencoded password with '/', '?' or '#'.
		{"s3://user:pa/ss@bucket/x", "s3://REDACTED"},
		{"s3://user:pa?ss@bucket/x", "s3://REDACTED"},
		{"s3://user:pa#ss@bucket/x", "s3://REDACTED"},
		{"s3://user:12?ss@bucket/x", "s3://REDACTED"},
		{"s3://bucket/x%zz?secret=1", "s3://bucket/REDACTED"},
		{"s3://bu cket/x?secret=1", "s3://bu cket/REDACTED"},
		{"", ""},
		{"not a url", "not a url"},
	}
	for _, c := range cases {
		if got := URL(c.in); got != c.want {
			t.Errorf("URL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestURLNeverLeavesASecretWhateverItIsGiven(t *testing.T) {
	const secret = "S3CR3T"
	shapes := []string{
		"s3://u:%s@b/x", "s3://%s@b/x", "s3://b/x?secret_key=%s", "s3://b/x?a=1&token=%s#f",
		"s3://u:%s/x@b/x", "s3://u:%s?@b", "s3://b/x?sig=%s%%", "s3://u:%s@b/%%zz", "azblob://c/x?se=1&sig=%s",
	}
	for _, shape := range shapes {
		in := fmt.Sprintf(shape, secret)
		if got := URL(in); strings.Contains(got, secret) {
			t.Errorf("URL(%q) = %q: the secret is still there", in, got)
		}
		line := fmt.Sprintf("open table %q: bad (%s): %s\n", in, in, in)
		if got := Text(line); strings.Contains(got, secret) {
			t.Errorf("Text(%q) = %q: the secret is still there", line, got)
		}
	}
}

func TestTextRedactsEveryURLInALine(t *testing.T) {
	in := `2026-01-02T03:04:05Z [ERROR] compactord: run failed: table=mem://u:p@t?key=K error="table t: open \"s3://a:b@bucket/x?sig=S\": boom" other=s3://bucket/ok`
	want := `2026-01-02T03:04:05Z [ERROR] compactord: run failed: table=mem://REDACTED@t?key=REDACTED error="table t: open \"s3://REDACTED@bucket/x?sig=REDACTED\": boom" other=s3://bucket/ok`
	if got := Text(in); got != want {
		t.Errorf("Text:\n got %s\nwant %s", got, want)
	}
	if got, want := Text("open table mem://u:p@x?secret_key=K: bad (see s3://b/t?sig=S), then s3://b/t."),
		"open table mem://REDACTED@x?secret_key=REDACTED: bad (see s3://b/t?sig=REDACTED), then s3://b/t."; got != want {
		t.Errorf("Text keeps the punctuation after a URL:\n got %s\nwant %s", got, want)
	}
	for _, s := range []string{"no url here", "://", "a://", "1://x:y@z", "s3://:::"} {
		_ = Text(s) // must not panic
	}
}

func TestErrorKeepsTheChainAndHidesTheSecret(t *testing.T) {
	sentinel := errors.New("sentinel")
	err := Error(fmt.Errorf("open s3://u:pw@b/x: %w", sentinel))
	if !errors.Is(err, sentinel) {
		t.Fatal("the redacted error lost its chain")
	}
	if got, want := err.Error(), "open s3://REDACTED@b/x: sentinel"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
	if Error(nil) != nil {
		t.Fatal("Error(nil) is not nil")
	}
}

func TestWriterRedactsEachWrite(t *testing.T) {
	var buf bytes.Buffer
	w := Writer(&buf)
	line := "x table=s3://b/t?secret_key=S3CR3T\n"
	n, err := io.WriteString(w, line)
	if err != nil || n != len(line) {
		t.Fatalf("write: %d, %v", n, err)
	}
	if got, want := buf.String(), "x table=s3://b/t?secret_key=REDACTED\n"; got != want {
		t.Fatalf("wrote %q, want %q", got, want)
	}
}

// A URL with nothing to cut comes back as the caller's string, not as a
// copy: the daemon keeps one per table.
func TestURLWithNothingToCutIsTheCallersString(t *testing.T) {
	for _, raw := range []string{"file:///data/t00001", "s3://bucket/prefix/table?region=eu-west-1", "mem://x"} {
		got := URL(raw)
		if got != raw || unsafe.StringData(got) != unsafe.StringData(raw) {
			t.Errorf("URL(%q) = %q, a copy", raw, got)
		}
	}
}
