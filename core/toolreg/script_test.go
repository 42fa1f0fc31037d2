package toolreg

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/corral-dev/corral/guest"
)

// TestToolchainRegistriesScript runs the guest script (guest/toolchain-registries.sh) with fake npm, go
// and python3 (the answers the real tools give, with example hosts) and a
// cargo config, and parses its output with the host's parser. apt reads
// the test machine's own sources, so apt's findings are not compared.
func TestToolchainRegistriesScript(t *testing.T) {
	bin, home := t.TempDir(), t.TempDir()
	for _, tool := range []string{"sh", "sed", "head", "cat"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Skip(tool + " not installed")
		}
		if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	fakes := map[string]string{
		"npm": `[ "$*" = "config get registry" ] && echo https://npm.mirror.example/`,
		"go":  `case "$2" in GOPROXY) echo 'https://goproxy.mirror.example,direct' ;; GOSUMDB) echo 'sumdb.mirror.example' ;; esac`,
		"python3": `case "$*" in
"-m pip --version") echo 'pip 23.0.1' ;;
"-m pip config list") echo "global.index-url='https://pypi.mirror.example/simple'" ;;
-c*) printf '%s\n' https://index.default.example/simple https://files.default.example/ ;;
esac`,
	}
	for name, body := range fakes {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(home, ".cargo"), 0o755); err != nil {
		t.Fatal(err)
	}
	cargo := "[source.crates-io]\nreplace-with = \"m\"\n[source.m]\nregistry = \"sparse+https://crates.mirror.example/index/\"\n"
	if err := os.WriteFile(filepath.Join(home, ".cargo", "config.toml"), []byte(cargo), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(bin, "sh"), "-s")
	cmd.Env = []string{"PATH=" + bin, "HOME=" + home, "PIP_EXTRA_INDEX_URL=https://extra.mirror.example/simple"}
	cmd.Stdin = strings.NewReader(guest.ToolchainRegistries())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("script: %v\n%s", err, out)
	}
	rec, err := ParseBytes(out)
	if err != nil {
		t.Fatal(err)
	}
	var got []Registry
	for _, g := range rec.Registries {
		if g.Tool != ToolApt {
			got = append(got, g)
		}
	}
	want := []Registry{
		{Entry: "npm.mirror.example", Tool: ToolNPM, Source: "registry"},
		{Entry: "goproxy.mirror.example", Tool: ToolGo, Source: "GOPROXY"},
		{Entry: "sumdb.mirror.example", Tool: ToolGo, Source: "GOSUMDB"},
		{Entry: "pypi.mirror.example", Tool: ToolPip, Source: "global.index-url"},
		{Entry: "extra.mirror.example", Tool: ToolPip, Source: "PIP_EXTRA_INDEX_URL"},
		{Entry: "crates.mirror.example", Tool: ToolCargo, Source: filepath.Join(home, ".cargo", "config.toml")},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("registries:\n%+v\nwant:\n%+v\noutput:\n%s", got, want, out)
	}
}
