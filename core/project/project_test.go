package project

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		"web":           "web",
		"My Project":    "my-project",
		"__init__":      "init",
		"a..b--c":       "a-b-c",
		"Café Ünïcode":  "caf-n-code",
		"日本語":           "",
		"UPPER_case.2":  "upper-case-2",
		"-leading-":     "leading",
		"x\x00y":        "x-y",
		"emoji😀project": "emoji-project",
	} {
		if got := Slug(in); got != want {
			t.Errorf("Slug(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestBoxName(t *testing.T) {
	const lh = "/home/u/.corral/lima"
	tests := []struct {
		name, dir, want string
	}{
		{"plain", "/home/u/src/web", "web-"},
		{"unicode", "/home/u/src/日本語", "box-"},
		{"mixed unicode", "/home/u/src/Café", "caf-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := BoxName(tt.dir, lh)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(got, tt.want) || len(got) != len(tt.want)+6 {
				t.Fatalf("BoxName = %q, want prefix %q and 6 hex", got, tt.want)
			}
			if err := CheckName(got, lh); err != nil {
				t.Fatalf("derived name fails CheckName: %v", err)
			}
		})
	}
}

func TestBoxNameSameBasenameDiffers(t *testing.T) {
	a, _ := BoxName("/home/u/work/api", "/l")
	b, _ := BoxName("/home/u/play/api", "/l")
	if a == b {
		t.Fatalf("two projects named api share box %q", a)
	}
	if a2, _ := BoxName("/home/u/work/api", "/l"); a2 != a {
		t.Fatalf("not stable: %q vs %q", a, a2)
	}
}

func TestBoxNameLongFitsSocketLimit(t *testing.T) {
	long := "/src/" + strings.Repeat("very-long-project-name-", 10)
	for _, lh := range []string{"/l", "/Users/someone/.corral/lima", "/" + strings.Repeat("d", 60)} {
		got, err := BoxName(long, lh)
		if err != nil {
			t.Fatalf("%s: %v", lh, err)
		}
		sock := filepath.Join(lh, got, longestSock)
		if len(sock) > MaxSockPath {
			t.Errorf("socket path %d bytes > %d: %s", len(sock), MaxSockPath, sock)
		}
		if len("lima-"+got) > 63 {
			t.Errorf("hostname too long: %s", got)
		}
		if strings.HasSuffix(strings.TrimSuffix(got, got[len(got)-7:]), "-") {
			t.Errorf("double dash in %q", got)
		}
	}
}

func TestBoxNameCannotFit(t *testing.T) {
	lh := "/" + strings.Repeat("x", 80)
	_, err := BoxName("/src/web", lh)
	if !errors.Is(err, ErrNameTooLong) {
		t.Fatalf("err = %v, want ErrNameTooLong", err)
	}
	if !strings.Contains(err.Error(), "CORRAL_HOME") {
		t.Errorf("error lacks a hint: %v", err)
	}
}

func TestCheckName(t *testing.T) {
	for _, bad := range []string{"", "Web", "a_b", "-a", "a-", "a--b", "a b", strings.Repeat("a", 70)} {
		if CheckName(bad, "/l") == nil {
			t.Errorf("CheckName(%q) accepted", bad)
		}
	}
	if err := CheckName("web-abc123", "/l"); err != nil {
		t.Error(err)
	}
}

func TestResolveSymlinkedProject(t *testing.T) {
	root := t.TempDir()
	real := filepath.Join(root, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	a, err := Resolve(real, "/l")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Resolve(link, "/l")
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatalf("symlink changes identity: %+v vs %+v", a, b)
	}
	realRoot, _ := filepath.EvalSymlinks(real)
	if a.Dir != realRoot {
		t.Errorf("Dir = %s, want %s", a.Dir, realRoot)
	}
}

func TestResolveErrors(t *testing.T) {
	if _, err := ResolveDir(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("missing dir accepted")
	}
	f := filepath.Join(t.TempDir(), "file")
	_ = os.WriteFile(f, nil, 0o600)
	if _, err := ResolveDir(f); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("file accepted: %v", err)
	}
}

func TestCanonicalName(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entries []string
		want    string
	}{
		{"web", []string{"Web"}, "Web"},
		{"WEB", []string{"a", "Web", "b"}, "Web"},
		{"web", []string{"web", "Web"}, "web"},    // case-sensitive volume: exact wins
		{"WEB", []string{"web", "Web"}, "WEB"},    // ambiguous: keep
		{"other", []string{"Web"}, "other"},       // not listed: keep
		{"straße", []string{"STRASSE"}, "straße"}, // EqualFold is simple folding only
	} {
		if got := canonicalName(tc.name, tc.entries); got != tc.want {
			t.Errorf("canonicalName(%q, %q) = %q, want %q", tc.name, tc.entries, got, tc.want)
		}
	}
}

// ~/src/Web and ~/src/web on a case-insensitive volume are one folder:
// both spellings give the listed one, hence one box name.
func TestCanonicalCaseOneBox(t *testing.T) {
	fs := map[string][]string{
		"/":                 {"Users"},
		"/Users":            {"me"},
		"/Users/me":         {"src"},
		"/Users/me/src":     {"web"},
		"/Users/me/src/web": {},
	}
	names := func(dir string) ([]string, error) {
		for k, v := range fs {
			if strings.EqualFold(k, dir) {
				return v, nil
			}
		}
		return nil, os.ErrNotExist
	}
	a := CanonicalCase("/Users/me/src/Web", names)
	b := CanonicalCase("/users/ME/src/web", names)
	if a != "/Users/me/src/web" || a != b {
		t.Errorf("CanonicalCase: %q and %q, want both /Users/me/src/web", a, b)
	}
	na, _ := BoxName(a, "/Users/me/.lima")
	nb, _ := BoxName(b, "/Users/me/.lima")
	if na != nb {
		t.Errorf("box names %q and %q", na, nb)
	}
	if got := CanonicalCase("/", names); got != "/" {
		t.Errorf("CanonicalCase(/) = %q", got)
	}
}

// On a real (case-sensitive) directory the path comes back unchanged.
func TestCanonicalCaseRealDir(t *testing.T) {
	d := t.TempDir()
	sub := filepath.Join(d, "Web")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	if got := CanonicalCase(sub, readNames); got != sub {
		t.Errorf("CanonicalCase(%q) = %q", sub, got)
	}
}
