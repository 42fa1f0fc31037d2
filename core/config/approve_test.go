package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestApproveEgress(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct{ name, before, after string }{
		{"no file", "", "# corral approve 2026-12-01: requested by /p/.corral.toml (sha256:ab)\negress = [\"a.test\", \"b.test\"]\n"},
		{"before the first table", "# mine\nnetwork = \"broker\"\n[env]\nA = \"1\"\n",
			"# mine\nnetwork = \"broker\"\n# corral approve 2026-12-01: requested by /p/.corral.toml (sha256:ab)\negress = [\"a.test\", \"b.test\"]\n[env]\nA = \"1\"\n"},
		{"an existing list, over lines", "cpus = 4\negress = [\n  \"old.test\", # why\n  \"a.test\",\n]\n# after\n",
			"cpus = 4\n# corral approve 2026-12-01: requested by /p/.corral.toml (sha256:ab)\negress = [\"old.test\", \"a.test\", \"b.test\"]\n# after\n"},
		{"no trailing newline", "cpus = 4", "cpus = 4\n# corral approve 2026-12-01: requested by /p/.corral.toml (sha256:ab)\negress = [\"a.test\", \"b.test\"]\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "box.toml")
			if tc.before != "" {
				must(t, os.WriteFile(p, []byte(tc.before), 0o600))
			}
			if err := ApproveEgress(p, []string{"a.test", "b.test"}, "/p/.corral.toml", "sha256:ab", now); err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(p)
			if string(b) != tc.after {
				t.Errorf("file:\n%s\nwant:\n%s", b, tc.after)
			}
		})
	}
	p := filepath.Join(t.TempDir(), "box.toml")
	must(t, os.WriteFile(p, []byte("egress = [\"x\"\n"), 0o600))
	if err := ApproveEgress(p, []string{"a.test"}, "f", "h", now); err == nil || !strings.Contains(err.Error(), "fix it first") {
		t.Errorf("a broken trusted file: %v", err)
	}
	if b, _ := os.ReadFile(p); !slices.Equal(b, []byte("egress = [\"x\"\n")) {
		t.Errorf("a broken trusted file was changed: %q", b)
	}
}
