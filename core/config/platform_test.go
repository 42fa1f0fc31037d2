package config

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Every (os, vm_type, mount_type) combination: the default mount type
// follows vm_type, and what a file sets is either accepted as Lima
// accepts it or refused naming the key.
func TestPlatformMountTypes(t *testing.T) {
	mac, linux := Platform{OS: "darwin", Arch: "arm64"}, Platform{OS: "linux", Arch: "amd64"}
	for _, tc := range []struct {
		name      string
		p         Platform
		global    string
		wantMount string // "" when an error is expected
		wantErr   string
	}{
		{"mac default", mac, ``, "virtiofs", ""},
		{"mac qemu gets 9p by default", mac, `vm_type = "qemu"`, "9p", ""},
		{"mac qemu with 9p", mac, "vm_type = \"qemu\"\nmount_type = \"9p\"", "9p", ""},
		{"mac qemu with reverse-sshfs", mac, "vm_type = \"qemu\"\nmount_type = \"reverse-sshfs\"", "reverse-sshfs", ""},
		{"mac qemu with virtiofs is refused", mac, "vm_type = \"qemu\"\nmount_type = \"virtiofs\"", "", `mount_type = "virtiofs": Lima's qemu driver on macOS cannot mount virtiofs`},
		{"mac vz with 9p is refused", mac, `mount_type = "9p"`, "", `Lima's vz driver on macOS cannot mount 9p`},
		{"linux default", linux, ``, "9p", ""},
		{"linux virtiofs", linux, `mount_type = "virtiofs"`, "virtiofs", ""},
		{"linux vz is refused", linux, `vm_type = "vz"`, "", "vz (Apple's Virtualization.framework) exists only on macOS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := filepath.Join(t.TempDir(), "config.toml")
			if err := os.WriteFile(g, []byte(tc.global), 0o600); err != nil {
				t.Fatal(err)
			}
			res, err := Load(Request{Platform: tc.p, GlobalPath: g, HostMemory: testHostMem, HostCPUs: 8})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				if !strings.Contains(err.Error(), g) {
					t.Errorf("err = %v, want the file named", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := string(*res.Config.MountType); got != tc.wantMount {
				t.Errorf("mount_type = %q, want %q", got, tc.wantMount)
			}
		})
	}
}

func TestPlatformDefaultOrigin(t *testing.T) {
	g := filepath.Join(t.TempDir(), "config.toml")
	_ = os.WriteFile(g, []byte(`vm_type = "qemu"`), 0o600)
	res, err := Load(Request{Platform: Platform{OS: "darwin", Arch: "arm64"}, GlobalPath: g})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"default", "vm_type qemu (default 9p)"}; !slices.Equal(res.Origin["mount_type"], want) {
		t.Errorf("origin = %q, want %q", res.Origin["mount_type"], want)
	}
}

func TestMountTypesForAreKnown(t *testing.T) {
	for _, p := range []Platform{{OS: "darwin"}, {OS: "linux"}} {
		for _, vm := range VMTypes {
			for _, mt := range MountTypesFor(p, VMType(vm)) {
				if !slices.Contains(MountTypes, string(mt)) {
					t.Errorf("%s/%s: %q is not in MountTypes", p.OS, vm, mt)
				}
			}
		}
	}
}

func TestTerminalKey(t *testing.T) {
	for _, v := range []string{"Terminal", "iTerm2", "Ghostty", "WezTerm", "kitty", "x-terminal-emulator", "Visual Studio Code"} {
		l, err := Parse(KindGlobal, "g.toml", []byte("terminal = "+strconv.Quote(v)))
		if err != nil {
			t.Fatal(err)
		}
		if errs := validate(l); len(errs) != 0 {
			t.Errorf("%q refused: %v", v, errs)
		}
	}
	for _, v := range []string{"", "/bin/sh", "-e", "../Terminal", "Term\ninal", "a;b", "$(id)", strings.Repeat("x", 65)} {
		l, err := Parse(KindGlobal, "g.toml", []byte("terminal = "+strconv.Quote(v)))
		if err != nil {
			t.Fatal(err)
		}
		if errs := validate(l); len(errs) != 1 || !strings.Contains(errs[0].Error(), "terminal") {
			t.Errorf("%q: %v, want one violation on terminal", v, errs)
		}
	}
	proj := newProject(t, []byte(`terminal = "iTerm2"`))
	if _, err := Load(request(proj, "")); err == nil {
		t.Error("a repository chose the host's terminal app")
	}
}

func TestProjectRootsKey(t *testing.T) {
	l, err := Parse(KindGlobal, "g.toml", []byte(`project_roots = ["~/src", "/srv/code", "~"]`))
	if err != nil {
		t.Fatal(err)
	}
	if errs := validate(l); len(errs) != 0 {
		t.Errorf("refused: %v", errs)
	}
	for _, v := range []string{"", "src", "~other/src", "/a\nb", "/a\x1bb"} {
		l, err := Parse(KindGlobal, "g.toml", []byte("project_roots = ["+strconv.Quote(v)+"]"))
		if err != nil {
			t.Fatal(err)
		}
		if errs := validate(l); len(errs) != 1 || !strings.Contains(errs[0].Error(), "project_roots") {
			t.Errorf("%q: %v, want one violation on project_roots", v, errs)
		}
	}
	many := strings.Repeat(`"/r", `, MaxProjectRoots+1)
	l, err = Parse(KindGlobal, "g.toml", []byte("project_roots = ["+many+"]"))
	if err != nil {
		t.Fatal(err)
	}
	if errs := validate(l); len(errs) != 1 {
		t.Errorf("%d roots: %v, want one violation", MaxProjectRoots+1, errs)
	}
	proj := newProject(t, []byte(`project_roots = ["/"]`))
	if _, err := Load(request(proj, "")); err == nil || !strings.Contains(err.Error(), "project_roots") {
		t.Errorf("a repository set project_roots: %v", err)
	}
}
