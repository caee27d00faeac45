package testutil

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/compactord/compactord"

// testSupport reports whether pkg is test support: this package and its
// subpackages, the real-server suites under integration/ and delta's own
// test helpers (delta/internal/deltatest).
func testSupport(pkg string) bool {
	for _, root := range []string{module + "/internal/testutil", module + "/integration", module + "/delta/internal/deltatest"} {
		if pkg == root || strings.HasPrefix(pkg, root+"/") {
			return true
		}
	}
	return false
}

// mayUseTestSupport reports whether pkg may import test support: test
// support itself, the benchmarks and data generators (bench/) and the
// developer tools (tools/), none of which the binary links.
func mayUseTestSupport(pkg string) bool {
	if testSupport(pkg) {
		return true
	}
	for _, root := range []string{module + "/bench", module + "/tools"} {
		if pkg == root || strings.HasPrefix(pkg, root+"/") {
			return true
		}
	}
	return false
}

// listed is what `go list -json` says of one package (tests excluded).
type listed struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// TestProductionCodeDependsOnNoTestSupport fails when the non-test files of
// a production package import test support, directly or through another
// package: test helpers (fake servers, table builders, fault injection)
// must never reach the binary. `go list -deps` is the build's own answer to
// what a package links; the error names the chain of imports.
func TestProductionCodeDependsOnNoTestSupport(t *testing.T) {
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports,Deps", "./...")
	cmd.Dir = RepoRoot(t)
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]listed{}
	var order []string
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		pkgs[p.ImportPath] = p
		order = append(order, p.ImportPath)
	}
	if len(pkgs) < 10 || !slices.ContainsFunc(order, testSupport) {
		t.Fatalf("go list ./... from %s listed %d packages, none of them test support: the test would check nothing", cmd.Dir, len(pkgs))
	}
	checked := 0
	for _, name := range order {
		if mayUseTestSupport(name) {
			continue
		}
		checked++
		if !slices.ContainsFunc(pkgs[name].Deps, testSupport) {
			continue
		}
		t.Errorf("production package %s depends on test support: %s", name, strings.Join(chain(pkgs, name), " -> "))
	}
	if checked == 0 {
		t.Fatal("no production package checked")
	}
}

// chain returns the shortest import path from pkg to a test-support
// package, through the packages of this module.
func chain(pkgs map[string]listed, pkg string) []string {
	prev := map[string]string{pkg: ""}
	queue := []string{pkg}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if testSupport(cur) {
			var path []string
			for p := cur; p != ""; p = prev[p] {
				path = append(path, p)
			}
			slices.Reverse(path)
			return path
		}
		for _, imp := range pkgs[cur].Imports {
			if _, seen := prev[imp]; seen || !strings.HasPrefix(imp, module+"/") {
				continue
			}
			prev[imp] = cur
			queue = append(queue, imp)
		}
	}
	return []string{pkg, "(a package outside ./...)"}
}
