package archtest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// row is one row of ARCHITECTURE.md's package table.
type row struct {
	line    int    // 1-based line in ARCHITECTURE.md
	cell    string // the package cell as written, e.g. "`delta/`"
	pkg     string // the package's path in the module, e.g. "delta"
	layer   int
	imports []string // the packages of ours the row says it imports
}

// pkg is one package of the module as `go list` sees it.
type pkg struct {
	imports []string // packages of ours, tests excluded
	goFiles int      // non-test Go files; 0 for a directory of tests only
}

// The package table says what every package of ours imports and at which
// layer it sits; the build says what it really imports. They must agree:
// a new arrow, a new package or a removed one fails here until the table
// says so, and an arrow to a package of the same or a higher layer fails
// until the layers are changed on purpose.
func TestTheArchitectureTableMatchesTheBuild(t *testing.T) {
	root, module := moduleRoot(t)
	rows := parseTable(t, filepath.Join(root, "ARCHITECTURE.md"))
	pkgs := listPackages(t, root, module)
	for _, p := range problems(rows, pkgs, func(dir string) bool { return goDirWithoutPackage(root, dir) }) {
		t.Error(p)
	}
}

// problems lists every difference between rows and pkgs, each naming the
// row (line and package cell) and the column to change. nonGo reports
// whether a row's path is a directory without Go files (a row of non-Go
// tools).
func problems(rows []row, pkgs map[string]pkg, nonGo func(dir string) bool) []string {
	var out []string
	errorf := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	byPkg := map[string]row{}
	for _, r := range rows {
		if prev, dup := byPkg[r.pkg]; dup {
			errorf("ARCHITECTURE.md:%d: row %s repeats the row of line %d: keep one row per package", r.line, r.cell, prev.line)
			continue
		}
		byPkg[r.pkg] = r
	}

	var names []string
	for name, p := range pkgs {
		if p.goFiles > 0 {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		if _, ok := byPkg[name]; !ok {
			errorf("ARCHITECTURE.md: package %s has no row in the package table: add a row | `%s/` | layer | owns | must not | %s | departs |",
				name, name, importsCell(pkgs[name].imports))
		}
	}

	for _, r := range rows {
		p, ok := pkgs[r.pkg]
		if !ok {
			if nonGo(r.pkg) {
				if len(r.imports) > 0 {
					errorf("ARCHITECTURE.md:%d: row %s, column imports: %s holds no Go package, so it imports none of ours: make the column read —", r.line, r.cell, r.pkg)
				}
				continue
			}
			errorf("ARCHITECTURE.md:%d: row %s names no package of the module and no directory: remove the row or correct its package cell", r.line, r.cell)
			continue
		}
		if !slices.Equal(r.imports, p.imports) {
			var add, drop []string
			for _, i := range p.imports {
				if !slices.Contains(r.imports, i) {
					add = append(add, i)
				}
			}
			for _, i := range r.imports {
				if !slices.Contains(p.imports, i) {
					drop = append(drop, i)
				}
			}
			var what []string
			if len(add) > 0 {
				what = append(what, fmt.Sprintf("add %s (imported by the code)", strings.Join(add, ", ")))
			}
			if len(drop) > 0 {
				what = append(what, fmt.Sprintf("remove %s (not imported)", strings.Join(drop, ", ")))
			}
			if len(what) == 0 {
				what = append(what, "sort it")
			}
			errorf("ARCHITECTURE.md:%d: row %s, column imports: %s; it should read: %s", r.line, r.cell, strings.Join(what, "; "), importsCell(p.imports))
		}
	}

	// The layer rule, over the arrows the build has (the imports check
	// above reports any arrow the table lacks).
	need := neededLayers(byPkg, pkgs)
	for _, r := range rows {
		p, ok := pkgs[r.pkg]
		if !ok {
			continue
		}
		for _, i := range p.imports {
			dep, ok := byPkg[i]
			if !ok || dep.layer < r.layer {
				continue
			}
			errorf("ARCHITECTURE.md:%d: row %s, column layer: %s (layer %d) imports %s (layer %d), and a package may import only packages of lower layers: remove the import, or give %s a layer above %d (layers that hold with every arrow of the build: %s)",
				r.line, r.cell, r.pkg, r.layer, i, dep.layer, r.pkg, dep.layer, need)
		}
	}
	return out
}

// neededLayers is, for the rows whose layer is too low for what they
// import, the least layer each needs when every row keeps at least its
// own: what to write in the layer column (e.g. after a split adds a layer
// beneath others).
func neededLayers(byPkg map[string]row, pkgs map[string]pkg) string {
	memo := map[string]int{}
	var need func(name string) int
	need = func(name string) int { // the import graph has no cycles (Go refuses them)
		if l, ok := memo[name]; ok {
			return l
		}
		l := byPkg[name].layer
		for _, i := range pkgs[name].imports {
			if _, ok := byPkg[i]; ok {
				l = max(l, need(i)+1)
			}
		}
		memo[name] = l
		return l
	}
	var out []string
	for name, r := range byPkg {
		if _, ok := pkgs[name]; !ok {
			continue
		}
		if l := need(name); l != r.layer {
			out = append(out, fmt.Sprintf("%s %d→%d", r.cell, r.layer, l))
		}
	}
	slices.Sort(out)
	if len(out) == 0 {
		return "none needed"
	}
	return strings.Join(out, ", ")
}

// importsCell is the imports column of a package importing imports.
func importsCell(imports []string) string {
	if len(imports) == 0 {
		return "—"
	}
	return strings.Join(imports, ", ")
}

// parseTable reads the package table of ARCHITECTURE.md: the table whose
// header starts with "package", with "layer" and "imports" columns. The
// package cell names one package in backquotes (`delta/`); the imports
// cell lists packages of ours separated by commas, "—" for none, and text
// in parentheses is a remark (third-party imports, ...), not checked.
func parseTable(t *testing.T, path string) []row {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, probs, err := readTable(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range probs {
		t.Error(p)
	}
	return rows
}

// readTable parses the package table from r (see parseTable); problems
// are rows it could not read.
func readTable(r io.Reader) (rows []row, problems []string, err error) {
	var (
		header                       []string
		colPkg, colLayer, colImports = -1, -1, -1
		inTable                      bool
	)
	errorf := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break
			}
			continue
		}
		cells := splitRow(line)
		if !inTable {
			if len(cells) == 0 || !strings.EqualFold(cells[0], "package") {
				continue
			}
			inTable, header = true, cells
			for i, c := range cells {
				switch strings.ToLower(c) {
				case "package":
					colPkg = i
				case "layer":
					colLayer = i
				case "imports":
					colImports = i
				}
			}
			if colLayer < 0 || colImports < 0 {
				return nil, nil, fmt.Errorf("ARCHITECTURE.md:%d: the package table has no %q or no %q column: %q", n, "layer", "imports", line)
			}
			continue
		}
		if strings.Trim(line, "|-: ") == "" {
			continue // the separator row
		}
		if len(cells) != len(header) {
			errorf("ARCHITECTURE.md:%d: %d cells where the header has %d (a | inside a cell?): %.80s", n, len(cells), len(header), line)
			continue
		}
		rw := row{line: n, cell: cells[colPkg]}
		names := quoted(cells[colPkg])
		if len(names) != 1 {
			errorf("ARCHITECTURE.md:%d: row %s, column package: name one package in backquotes (`dir/`), one row per package", n, rw.cell)
			continue
		}
		rw.pkg = strings.TrimSuffix(names[0], "/")
		layer, err := strconv.Atoi(strings.Trim(cells[colLayer], "` "))
		if err != nil {
			errorf("ARCHITECTURE.md:%d: row %s, column layer: %q is not a number", n, rw.cell, cells[colLayer])
			continue
		}
		rw.layer = layer
		rw.imports = importList(cells[colImports])
		rows = append(rows, rw)
	}
	if err := sc.Err(); err != nil {
		return nil, nil, err
	}
	if len(rows) == 0 {
		return nil, nil, errors.New("ARCHITECTURE.md: no package table (a table whose header starts with | package |)")
	}
	return rows, problems, nil
}

// splitRow returns the trimmed cells of a table line.
func splitRow(line string) []string {
	line = strings.TrimPrefix(strings.TrimSuffix(line, "|"), "|")
	cells := strings.Split(line, "|")
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	return cells
}

// quoted returns the backquoted spans of s.
func quoted(s string) []string {
	var out []string
	for {
		i := strings.IndexByte(s, '`')
		if i < 0 {
			return out
		}
		j := strings.IndexByte(s[i+1:], '`')
		if j < 0 {
			return out
		}
		out = append(out, s[i+1:i+1+j])
		s = s[i+1+j+1:]
	}
}

// importList parses an imports cell: remarks in parentheses dropped,
// packages separated by commas, "—" or "-" for none; sorted.
func importList(cell string) []string {
	var b strings.Builder
	depth := 0
	for _, r := range cell {
		switch {
		case r == '(':
			depth++
		case r == ')' && depth > 0:
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	var out []string
	for _, p := range strings.Split(b.String(), ",") {
		p = strings.TrimSuffix(strings.Trim(strings.TrimSpace(p), "`"), "/")
		if p == "" || p == "—" || p == "-" {
			continue
		}
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// moduleRoot returns the module's directory and path.
func moduleRoot(t *testing.T) (dir, module string) {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}} {{.Path}}").Output()
	if err != nil {
		t.Fatalf("go list -m: %v\n%s", err, stderrOf(err))
	}
	dir, module, ok := strings.Cut(strings.TrimSpace(string(out)), " ")
	if !ok {
		t.Fatalf("go list -m: %q", out)
	}
	return dir, module
}

// listPackages returns the module's packages by path inside the module
// ("delta", "cmd/compactord") with the packages of ours each imports.
func listPackages(t *testing.T, root, module string) map[string]pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}} {{len .GoFiles}} {{join .Imports " "}}`, "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v\n%s", err, stderrOf(err))
	}
	pkgs := map[string]pkg{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			t.Fatalf("go list: %q", line)
		}
		name, ok := ours(f[0], module)
		if !ok || name == "" {
			continue
		}
		n, err := strconv.Atoi(f[1])
		if err != nil {
			t.Fatalf("go list: %q", line)
		}
		p := pkg{goFiles: n}
		for _, i := range f[2:] {
			if dep, ok := ours(i, module); ok && dep != "" {
				p.imports = append(p.imports, dep)
			}
		}
		slices.Sort(p.imports)
		pkgs[name] = p
	}
	if len(pkgs) == 0 {
		t.Fatal("go list ./... listed no package")
	}
	return pkgs
}

// ours returns the path inside the module of an import path of the module.
func ours(importPath, module string) (string, bool) {
	if importPath == module {
		return "", true
	}
	rest, ok := strings.CutPrefix(importPath, module+"/")
	return rest, ok
}

// goDirWithoutPackage reports whether dir (inside root) is a directory with
// no Go file: a row of non-Go tools (tools/webcheck) or scripts (bench).
func goDirWithoutPackage(root, dir string) bool {
	st, err := os.Stat(filepath.Join(root, filepath.FromSlash(dir)))
	if err != nil || !st.IsDir() {
		return false
	}
	gos, _ := filepath.Glob(filepath.Join(root, filepath.FromSlash(dir), "*.go"))
	return len(gos) == 0
}

// stderrOf is what a failed command wrote on stderr (an import cycle, a
// package that does not build).
func stderrOf(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(ee.Stderr)
	}
	return ""
}
