package lima

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestSSHPorts(t *testing.T) {
	home := t.TempDir()
	cfg, err := os.ReadFile("testdata/ssh-1.2.2.config")
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"c1": cfg, "c2": []byte("Host lima-c2\n  Port 60022\n"), "bad": []byte("Port x\n")} {
		if err := os.MkdirAll(filepath.Join(home, name), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, name, fileSSHConfig), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got := SSHPorts(home)
	slices.Sort(got)
	if !slices.Equal(got, []int{42117, 60022}) {
		t.Fatalf("SSHPorts = %v, want [42117 60022]", got)
	}
}
