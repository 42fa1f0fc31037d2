package config

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckProjectPath(t *testing.T) {
	for _, ok := range []string{"node_modules", "secrets/.env", ".env", "a/b/c", "x+y@z", "v1.2-rc", "secrets/"} {
		if err := CheckProjectPath(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "/etc", "a b", "a;b", "$(id)", "`id`", "*", "a/../b", "..", ".", "a//b", "a//", "-rf", "a/-x",
		"a\nb", "a'b", `a"b`, "a\\b", "é", "a\x00b", strings.Repeat("a", 256)} {
		if err := CheckProjectPath(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// FuzzCheckProjectPath: an accepted entry is one word to the shell (no
// space, quote, glob, expansion or control character), relative, and stays
// inside the project after joining.
func FuzzCheckProjectPath(f *testing.F) {
	for _, s := range []string{"node_modules", "a/b", "../x", "a b", "$(x)", ".env"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if CheckProjectPath(p) != nil {
			return
		}
		if strings.ContainsAny(p, " \t\n'\"`$\\*?[]{}()<>|&;!~#=%^,:") {
			t.Fatalf("accepted a shell character: %q", p)
		}
		if j := filepath.Join("/proj", p); !strings.HasPrefix(j, "/proj/") || j != "/proj/"+strings.TrimSuffix(p, "/") {
			t.Fatalf("%q joins to %q", p, j)
		}
	})
}
