package cli

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// goldenFile compares got with testdata/golden/NAME (go test -update writes
// it). repl pairs turn a test's temporary paths and names into stable
// words first (each pair: the text, then its word).
func goldenFile(t *testing.T, name, got string, repl ...string) {
	t.Helper()
	got = strings.NewReplacer(repl...).Replace(got)
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test -update rewrites it):\n%s", path, diffLines(got, string(want)))
	}
}

// envWords are the replacements that make e's paths and box name stable
// in a golden file: the trusted layer, the home, the project, the box.
func envWords(e env) []string {
	return []string{e.home, "HOME", e.proj, "PROJECT", e.box, "BOX"}
}
