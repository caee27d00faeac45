package policies

import (
	"strings"
	"testing"
)

func TestClusteringColumnsAutoLetsTheDaemonChooseTheKeys(t *testing.T) {
	dir := t.TempDir()
	src := "table \"t\" {\n  url = \"mem://t\"\n  strategy = \"zcube\"\n  clustering {\n    columns = \"auto\"\n  }\n}\n"
	set, err := loadFile(t, dir, src)
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
	if _, err := loadFile(t, dir, bad); err == nil || !strings.Contains(err.Error(), `"auto"`) {
		t.Fatalf("columns = \"a\": err = %v", err)
	}
}
