package paths

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDefaultHonoursEnv(t *testing.T) {
	d := t.TempDir()
	t.Setenv(EnvHome, d)
	l, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	if l.Home != d || l.LimaHome() != filepath.Join(d, "lima") {
		t.Fatalf("layout = %+v", l)
	}
	if got := l.BoxMeta("web-abc123"); got != filepath.Join(d, "boxes", "web-abc123.json") {
		t.Errorf("BoxMeta = %s", got)
	}
	if got := l.ProjectConfig("web-abc123"); got != filepath.Join(d, "projects", "web-abc123.toml") {
		t.Errorf("ProjectConfig = %s", got)
	}
}

func TestEnsureCreatesPrivateDirs(t *testing.T) {
	l := Layout{Home: filepath.Join(t.TempDir(), "state")}
	if err := os.MkdirAll(l.LogsDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	for _, d := range l.Dirs() {
		st, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o700 {
			t.Errorf("%s mode %v", d, st.Mode().Perm())
		}
	}
}
