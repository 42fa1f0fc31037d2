package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestEnsureClone: the trusted layer of a project sent from another
// machine says source = "clone"; the rest of the file stays byte for
// byte; another source is refused, never rewritten.
func TestEnsureClone(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	dir := t.TempDir()
	for _, c := range []struct {
		name, in, want string
		written        bool
		err            error
	}{
		{name: "missing", in: "\x00", written: true,
			want: "# corral project receive 2026-01-02: a project sent from another machine is a clone (docs/REMOTE.md)\nsource = \"clone\"\n"},
		{name: "keys and a table", in: "# mine\nmemory = \"4GiB\"\n[env]\nA = \"b\"\n", written: true,
			want: "# mine\nmemory = \"4GiB\"\n# corral project receive 2026-01-02: a project sent from another machine is a clone (docs/REMOTE.md)\nsource = \"clone\"\n[env]\nA = \"b\"\n"},
		{name: "no final newline", in: "memory = \"4GiB\"", written: true,
			want: "memory = \"4GiB\"\n# corral project receive 2026-01-02: a project sent from another machine is a clone (docs/REMOTE.md)\nsource = \"clone\"\n"},
		{name: "clone already", in: "source = \"clone\"\n", want: "source = \"clone\"\n"},
		{name: "mount", in: "source = \"mount\"\n", want: "source = \"mount\"\n", err: ErrNotClone},
		{name: "broken", in: "sauce = 1\n", want: "sauce = 1\n", err: errors.New("any")},
	} {
		path := filepath.Join(dir, c.name, "box.toml")
		if c.in != "\x00" {
			must(t, os.MkdirAll(filepath.Dir(path), 0o700))
			must(t, os.WriteFile(path, []byte(c.in), 0o600))
		}
		written, err := EnsureClone(path, "corral project receive", now)
		switch {
		case c.err == nil && err != nil, c.err != nil && err == nil:
			t.Errorf("%s: err = %v, want %v", c.name, err, c.err)
		case c.err == ErrNotClone && !errors.Is(err, ErrNotClone):
			t.Errorf("%s: err = %v", c.name, err)
		}
		if written != c.written {
			t.Errorf("%s: written = %v", c.name, written)
		}
		got, _ := os.ReadFile(path)
		if string(got) != c.want {
			t.Errorf("%s: file\n%s\nwant\n%s", c.name, got, c.want)
		}
		if c.err == nil {
			l, err := LoadFile(KindTrusted, path)
			if err != nil || l.Config.Source == nil || *l.Config.Source != SourceClone {
				t.Errorf("%s: loads as %v, %v", c.name, l.Config.Source, err)
			}
		}
		if strings.Contains(c.name, "broken") && err != nil && !strings.Contains(err.Error(), "sauce") {
			t.Errorf("%s: the error does not name the key: %v", c.name, err)
		}
	}
}
