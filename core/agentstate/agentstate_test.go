package agentstate

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/corral-dev/corral/core/agent"
)

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{"": Seeded, "seeded": Seeded, "isolated": Isolated, "shared": Shared} {
		if got, err := ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseMode("Shared"); err == nil {
		t.Error("ParseMode accepted a wrong case")
	}
	if Shared.PerBox() || !Seeded.PerBox() || !Isolated.PerBox() {
		t.Error("PerBox")
	}
}

// EnsureTemplate writes the first-run files once; a template the user
// changed (or emptied) stays as it is.
func TestEnsureTemplateKeepsTheUsersTemplate(t *testing.T) {
	a, err := agent.Find(nil, "claude")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "claude")
	if err := EnsureTemplate(dir, a); err != nil {
		t.Fatal(err)
	}
	files, err := ReadTemplate(dir)
	if err != nil || len(files) != len(a.FirstRun) {
		t.Fatalf("template %v %v", files, err)
	}
	if err := os.Remove(filepath.Join(dir, "settings.json")); err != nil {
		t.Fatal(err)
	}
	if err := EnsureTemplate(dir, a); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "settings.json")); err == nil {
		t.Error("EnsureTemplate rewrote a file the user removed")
	}
}

func TestReadTemplateCaps(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "big"), make([]byte, MaxTemplateBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTemplate(dir); err == nil {
		t.Error("an oversized template was read")
	}
	files, err := ReadTemplate(filepath.Join(dir, "missing"))
	if err != nil || len(files) != 0 {
		t.Errorf("missing template: %v %v", files, err)
	}
}

func TestWriteSeedRefusesAnExistingDirectory(t *testing.T) {
	a, _ := agent.Find(nil, "shell")
	dst := t.TempDir() // exists
	if err := WriteSeed(dst, t.TempDir(), a, "/p"); err == nil {
		t.Error("WriteSeed wrote into an existing directory")
	}
}
