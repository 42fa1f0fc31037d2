package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
	"time"
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

// TestNextWriteRemovesOrphans: a temp left by a killed writer is removed by
// the next write of the same file once it is older than OrphanAge; a fresh
// temp (a concurrent writer) and other files' temps stay.
func TestNextWriteRemovesOrphans(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "state.json")
	old := time.Now().Add(-2 * OrphanAge)
	mk := func(name string, mtime time.Time) string {
		q := filepath.Join(dir, name)
		if err := os.WriteFile(q, []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(q, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return q
	}
	orphan := mk(".state.json.tmp-111", old)
	fresh := mk(".state.json.tmp-222", time.Now())
	other := mk(".other.json.tmp-333", old)
	notTemp := mk(".state.json.tmp-", old)
	if err := WriteFile(p, []byte("x"), FileMode); err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]bool{orphan: false, fresh: true, other: true, notTemp: true} {
		if _, err := os.Stat(q); (err == nil) != want {
			t.Errorf("%s exists = %v, want %v", filepath.Base(q), err == nil, want)
		}
	}
	if got := RemoveOrphans(dir, "", time.Now()); len(got) != 1 || got[0] != other {
		t.Errorf("RemoveOrphans = %v, want the other file's orphan", got)
	}
}
