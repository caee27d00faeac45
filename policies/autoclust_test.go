package policies

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestClusteringColumnsAutoLetsTheDaemonChooseTheKeys(t *testing.T) {
	dir := t.TempDir()
	src := "table \"t\" {\n  url = \"mem://t\"\n  strategy = \"zcube\"\n  clustering {\n    columns = \"auto\"\n  }\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "t.hcl"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	p := set.Tables[0]
	if !p.Clustering.Auto || p.Clustering.Columns != nil {
		t.Fatalf("clustering %+v, want auto without columns", p.Clustering)
	}
	var b strings.Builder
	if err := WriteHCL(&b, set); err != nil || !strings.Contains(b.String(), `columns                 = "auto"`) {
		t.Fatalf("format (%v):\n%s", err, b.String())
	}
	bad := strings.Replace(src, `"auto"`, `"a"`, 1)
	if err := os.WriteFile(filepath.Join(dir, "t.hcl"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadDir(dir); err == nil || !strings.Contains(err.Error(), `"auto"`) {
		t.Fatalf("columns = \"a\": err = %v", err)
	}
}
