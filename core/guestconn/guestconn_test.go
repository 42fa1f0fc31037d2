package guestconn

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/corral-dev/corral/core/paths"
)

func TestExe(t *testing.T) {
	dir := t.TempDir()
	corral := filepath.Join(dir, "corral")
	if err := os.WriteFile(corral, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := Exe(corral); got != corral {
		t.Errorf("no %s beside corral: Exe = %s, want corral", Binary, got)
	}
	small := filepath.Join(dir, Binary)
	if err := os.WriteFile(small, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := Exe(corral); got != corral {
		t.Errorf("%s not executable: Exe = %s, want corral", Binary, got)
	}
	if err := os.Chmod(small, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := Exe(corral); got != small {
		t.Errorf("Exe = %s, want %s", got, small)
	}
	// A directory of that name is not the program.
	other := t.TempDir()
	if err := os.Mkdir(filepath.Join(other, Binary), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := Exe(filepath.Join(other, "corral")); got != filepath.Join(other, "corral") {
		t.Errorf("directory %s: Exe = %s", Binary, got)
	}
}

func TestMainArguments(t *testing.T) {
	home := t.TempDir()
	t.Setenv(paths.EnvHome, home)
	for _, args := range [][]string{nil, {Command}, {Command, ""}, {Command, "b", "extra"}, {"other", "b"}} {
		if code := Main(args); code != 2 {
			t.Errorf("Main(%q) = %d, want 2", args, code)
		}
	}
}

func TestRunFailsIntoTheBrokerLog(t *testing.T) {
	l := paths.Layout{Home: t.TempDir()}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	guest, conn := os.NewFile(uintptr(fds[0]), "guest"), os.NewFile(uintptr(fds[1]), "conn")
	defer guest.Close()
	defer conn.Close()
	if err := Run(l, "b", conn); err == nil {
		t.Fatal("no broker listening: no error")
	}
	b, _ := os.ReadFile(l.BrokerLog("b"))
	if !strings.Contains(string(b), "corral guest-conn: box b: passing the guest connection to "+l.BrokerSocket("b")) {
		t.Errorf("broker log %q", b)
	}
}

// TestSmallProgramDependencies keeps cmd/corral-guest-conn small: the
// standard library without package net, and core/paths (with atomicfile
// and untrusted). Whatever it links
// is initialised for every guest connection.
func TestSmallProgramDependencies(t *testing.T) {
	allowed := map[string]bool{
		"github.com/corral-dev/corral/cmd/corral-guest-conn": true,
		"github.com/corral-dev/corral/core/guestconn":        true,
		"github.com/corral-dev/corral/core/paths":            true,
		"github.com/corral-dev/corral/core/atomicfile":       true,
		"github.com/corral-dev/corral/core/untrusted":        true, // atomicfile's reads; the standard library only
	}
	for _, goos := range []string{"linux", "darwin"} {
		cmd := exec.Command("go", "list", "-deps", "-f", "{{.Standard}} {{.ImportPath}}",
			"github.com/corral-dev/corral/cmd/corral-guest-conn")
		cmd.Env = append(cmd.Environ(), "GOOS="+goos)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list (%s): %v", goos, err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			std, pkg, _ := strings.Cut(line, " ")
			if std == "false" && !allowed[pkg] || pkg == "net" || strings.HasPrefix(pkg, "net/") {
				t.Errorf("%s: corral-guest-conn links %s", goos, pkg)
			}
		}
	}
}
