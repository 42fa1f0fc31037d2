package box

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/corral-dev/corral/core/display"

	"github.com/corral-dev/corral/core/limayaml"
	"github.com/corral-dev/corral/core/paths"
	"go.yaml.in/yaml/v3"
)

func TestProvisionFailureNamesTheScript(t *testing.T) {
	l := paths.Layout{Home: t.TempDir()}
	s := &Service{Layout: l}
	dir := filepath.Join(l.LimaHome(), "web-123456")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	r := limayaml.Rendered{Provision: []string{"/usr/local/bin/corral-launch", "guest/provision/00-base.sh", "guest/provision/40-network.sh"}}
	log := "[  1.0] cloud-init[445]: LIMA 2026| Executing /mnt/lima-cidata/provision.system/00000002\n" +
		"[  2.0] cloud-init[445]: LIMA 2026| WARNING: Failed to execute /mnt/lima-cidata/provision.system/00000002\n"
	if err := s.provisionFailure("web-123456", "qemu", r); err != nil {
		t.Fatalf("no log yet: %v", err)
	}
	_ = os.WriteFile(filepath.Join(dir, "serial.log"), []byte(log), 0o600)
	err := s.provisionFailure("web-123456", "qemu", r)
	var pe *ProvisionError
	if !errors.As(err, &pe) || pe.Script != "guest/provision/40-network.sh" {
		t.Fatalf("err = %v", err)
	}
	_ = os.WriteFile(filepath.Join(dir, "serial.log"), []byte("Executing /mnt/lima-cidata/provision.system/00000002\n"), 0o600)
	if err := s.provisionFailure("web-123456", "qemu", r); err != nil {
		t.Fatalf("healthy boot reported: %v", err)
	}
}

// TestProvisionFailureReadsEachDriversConsole: qemu's console is
// serial.log, vz's is serialv.log (Lima's pkg/store/filenames); a failure
// logged by one driver is found for that driver only.
func TestProvisionFailureReadsEachDriversConsole(t *testing.T) {
	l := paths.Layout{Home: t.TempDir()}
	s := &Service{Layout: l}
	r := limayaml.Rendered{Provision: []string{"a.sh", "b.sh"}}
	failed := "LIMA| WARNING: Failed to execute /mnt/lima-cidata/provision.system/00000001\n"
	for _, c := range []struct{ vmType, file string }{{"qemu", "serial.log"}, {"vz", "serialv.log"}} {
		box := c.vmType + "-123456"
		dir := filepath.Join(l.LimaHome(), box)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, c.file), []byte(failed), 0o600); err != nil {
			t.Fatal(err)
		}
		var pe *ProvisionError
		if err := s.provisionFailure(box, c.vmType, r); !errors.As(err, &pe) || pe.Script != "b.sh" || pe.Log != filepath.Join(dir, c.file) {
			t.Errorf("%s: err = %v", c.vmType, err)
		}
		other := map[string]string{"qemu": "vz", "vz": "qemu"}[c.vmType]
		if err := s.provisionFailure(box, other, r); err != nil {
			t.Errorf("%s's log read for %s: %v", c.file, other, err)
		}
	}
}

// TestProvisionFailureConsoleIsHostile: the guest writes the console log.
// Only its tail is read, a FIFO in its place is refused without blocking,
// and a script name taken from the log is capped for display.
func TestProvisionFailureConsoleIsHostile(t *testing.T) {
	l := paths.Layout{Home: t.TempDir()}
	s := &Service{Layout: l}
	r := limayaml.Rendered{Provision: []string{"a.sh", "b.sh"}}
	dir := filepath.Join(l.LimaHome(), "web-123456")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "serial.log")
	failed := "LIMA| WARNING: Failed to execute /mnt/lima-cidata/provision.system/00000001\n"
	write := func(b string) {
		t.Helper()
		if err := os.WriteFile(log, []byte(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	// A failure in the tail of a log larger than the tail is found.
	noise := strings.Repeat(strings.Repeat("x", 1023)+"\n", 2*consoleTail/1024)
	write(noise + failed)
	var pe *ProvisionError
	if err := s.provisionFailure("web-123456", "qemu", r); !errors.As(err, &pe) || pe.Script != "b.sh" {
		t.Fatalf("failure at the end of a large log: %v", err)
	}
	// Only the tail is read: a failure before it is not seen.
	write(failed + noise)
	if err := s.provisionFailure("web-123456", "qemu", r); err != nil {
		t.Fatalf("read past the tail: %v", err)
	}

	// An index the config does not have: the name comes from the log, capped.
	write("WARNING: Failed to execute /mnt/lima-cidata/provision.user/" + strings.Repeat("9", 5000) + "\n")
	err := s.provisionFailure("web-123456", "qemu", r)
	if !errors.As(err, &pe) || !strings.HasPrefix(pe.Script, "user script 999") || utf8.RuneCountInString(pe.Script) > display.MaxText {
		t.Fatalf("name from the log: %v", err)
	}

	// A FIFO in place of the log is refused at once (opening it would block).
	if err := os.Remove(log); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(log, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.provisionFailure("web-123456", "qemu", r) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("FIFO console: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reading a FIFO console log blocked")
	}
}

// TestProvisionStepName: with the template Up
// renders, the index Lima logs for a failed script is named by that
// script's file (the installer is one entry, so the steps after it keep
// their own names).
func TestProvisionStepName(t *testing.T) {
	f := &fakeLima{insts: map[string]string{}, fail: map[string]string{}}
	s, r := newTestService(t, f)
	rendered, err := Render(s.Layout, r, 42123, false)
	if err != nil {
		t.Fatal(err)
	}
	// The index of 40-network.sh among the template's entries, as Lima
	// numbers them: found by the script's text, not by the names.
	var tmpl limayaml.Template
	if err := yaml.Unmarshal(rendered.YAML, &tmpl); err != nil {
		t.Fatal(err)
	}
	idx := -1
	for i, p := range tmpl.Provision {
		if strings.Contains(p.Script, "/run/corral/provision/40-network.sh\"") {
			idx = i
		}
	}
	if idx < 1 {
		t.Fatal("no 40-network.sh in the template")
	}
	box := r.Project.Box
	dir := filepath.Join(s.Layout.LimaHome(), box)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	line := fmt.Sprintf("LIMA| WARNING: Failed to execute /mnt/lima-cidata/provision.system/%08d\n", idx)
	if err := os.WriteFile(filepath.Join(dir, "serial.log"), []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	var pe *ProvisionError
	if err := s.provisionFailure(box, "qemu", rendered); !errors.As(err, &pe) || pe.Script != "guest/provision/40-network.sh" {
		t.Fatalf("err = %v", err)
	}
}
