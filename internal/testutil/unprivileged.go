package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// unprivilegedEnv marks the child process RunUnprivileged starts.
const unprivilegedEnv = "COMPACTORD_TEST_UNPRIVILEGED"

// RunUnprivileged makes file permissions bind in the top-level test t, so
// that a directory chmod'ed to 0 really is unreadable. Root ignores
// permissions (CAP_DAC_OVERRIDE), so as root it runs the test again in a
// child process of this test binary without that capability (setpriv
// drops it from the bounding set), reports the child's outcome and returns
// true: the caller returns at once. Otherwise it returns false and the
// test goes on in this process. Either way it checks that a file of mode
// 0 cannot be read before the test relies on it, and fails the test when
// it can; it skips only when root and setpriv is missing.
//
//	if testutil.RunUnprivileged(t) {
//		return
//	}
func RunUnprivileged(t *testing.T) bool {
	t.Helper()
	if os.Geteuid() != 0 || os.Getenv(unprivilegedEnv) == "1" {
		checkPermissionsBind(t)
		return false
	}
	if strings.Contains(t.Name(), "/") {
		t.Fatalf("RunUnprivileged takes a top-level test, not %s", t.Name())
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("running as root without setpriv: cannot make a file unreadable")
	}
	cmd := exec.Command(setpriv, "--bounding-set", "-dac_override,-dac_read_search",
		os.Args[0], "-test.run=^"+regexp.QuoteMeta(t.Name())+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), unprivilegedEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s without CAP_DAC_OVERRIDE: %v\n%s", t.Name(), err, out)
	}
	if !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("%s without CAP_DAC_OVERRIDE did not pass:\n%s", t.Name(), out)
	}
	t.Logf("ran without CAP_DAC_OVERRIDE:\n%s", out)
	return true
}

// checkPermissionsBind fails t when a file of mode 0 can be read.
func checkPermissionsBind(t *testing.T) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "unreadable")
	if err := os.WriteFile(p, []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := os.ReadFile(p); err == nil {
		t.Fatal("a file of mode 0 is readable: permissions do not bind in this process")
	}
}

// UnreadableDir makes the directory dir holding files (name to content)
// and takes every permission from it until the test ends; a test using it
// runs where permissions bind (RunUnprivileged).
func UnreadableDir(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(dir, 0o755) })
}
