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

// The same folder reached by an NFC and an NFD spelling (APFS and HFS+
// match both: "é" as U+00E9 or as "e" + U+0301) is one path in NFC, hence
// one box, whichever form the directory lists, and with other capitals
// too.
func TestCanonicalCaseNFCAndNFD(t *testing.T) {
	const nfc, nfd = "caf\u00e9", "cafe\u0301"
	const nfcUpper, nfdUpper = "Caf\u00c9", "Cafe\u0301" // É precomposed; E + combining acute
	for _, stored := range []string{nfc, nfd} {
		listing := map[string][]string{"/": {"Users"}, "/Users": {"me"}, "/Users/me": {stored, "other"}}
		names := func(dir string) ([]string, error) {
			for k, v := range listing {
				if strings.EqualFold(k, dir) {
					return v, nil
				}
			}
			return nil, os.ErrNotExist
		}
		want := "/Users/me/" + nfc
		var boxes []string
		for _, spelled := range []string{nfc, nfd, nfcUpper, nfdUpper} {
			got := CanonicalCase("/Users/me/"+spelled, names)
			if got != want {
				t.Errorf("stored %+q, spelled %+q: %+q, want %+q", stored, spelled, got, want)
			}
			b, err := BoxName(got, "/Users/me/.lima")
			if err != nil {
				t.Fatal(err)
			}
			boxes = append(boxes, b)
		}
		for _, b := range boxes[1:] {
			if b != boxes[0] {
				t.Errorf("stored %+q: box names %q", stored, boxes)
			}
		}
	}
	// A component that is not listed is still NFC: both spellings of a
	// folder whose parent cannot be read give one path.
	none := func(string) ([]string, error) { return nil, os.ErrPermission }
	if a, b := CanonicalCase("/x/"+nfd, none), CanonicalCase("/x/"+nfc, none); a != b || a != "/x/"+nfc {
		t.Errorf("unreadable parent: %+q and %+q", a, b)
	}
}

func TestCanonicalNameNormalisation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entries []string
		want    string
	}{
		{"cafe\u0301", []string{"caf\u00e9"}, "caf\u00e9"},  // NFD asked, NFC listed
		{"caf\u00e9", []string{"cafe\u0301"}, "cafe\u0301"}, // NFC asked, NFD listed (made NFC by CanonicalCase)
		{"CAFE\u0301", []string{"caf\u00e9"}, "caf\u00e9"},  // and other capitals
		{"cafe", []string{"caf\u00e9"}, "cafe"},             // another name: kept
	} {
		if got := canonicalName(tc.name, tc.entries); got != tc.want {
			t.Errorf("canonicalName(%+q, %+q) = %+q, want %+q", tc.name, tc.entries, got, tc.want)
		}
	}
}
