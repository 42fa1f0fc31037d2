package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFileReplacesAndSetsModes(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a", "b", "state.json")
	if err := WriteFile(p, []byte("one"), FileMode); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(p, []byte("two"), FileMode); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "two" {
		t.Fatalf("content = %q, %v", b, err)
	}
	st, _ := os.Stat(p)
	if st.Mode().Perm() != FileMode {
		t.Errorf("file mode = %v", st.Mode().Perm())
	}
	dst, _ := os.Stat(filepath.Dir(p))
	if dst.Mode().Perm() != DirMode {
		t.Errorf("dir mode = %v", dst.Mode().Perm())
	}
	ents, _ := os.ReadDir(filepath.Dir(p))
	if len(ents) != 1 {
		t.Errorf("temp files left behind: %v", ents)
	}
}

func TestWriteFileFailureLeavesOldContent(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "state.json")
	if err := WriteFile(p, []byte("old"), FileMode); err != nil {
		t.Fatal(err)
	}
	// A directory where the file should go makes the rename fail.
	bad := filepath.Join(dir, "sub")
	if err := os.Mkdir(bad, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(bad, []byte("new"), FileMode); err == nil {
		t.Fatal("expected an error replacing a non-empty directory")
	}
	b, _ := os.ReadFile(p)
	if string(b) != "old" {
		t.Fatalf("old file changed: %q", b)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Errorf("temp files left behind: %v", ents)
	}
}
