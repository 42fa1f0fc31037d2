package desktoptest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// StartXvfb starts Xvfb on a free display (via -displayfd) and sets DISPLAY
// for the rest of the test. It skips the test when Xvfb is not installed
// (fails under CORRAL_REQUIRE_DESKTOP).
func StartXvfb(t testing.TB, geometry string) string {
	t.Helper()
	bin := LookPath(t, "Xvfb", "xvfb")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-displayfd", "3", "-screen", "0", geometry, "-nolisten", "tcp")
	cmd.ExtraFiles = []*os.File{w}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	got := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(r)
		s.Scan()
		got <- strings.TrimSpace(s.Text())
	}()
	select {
	case d := <-got:
		if d == "" {
			t.Fatal("Xvfb reported no display")
		}
		t.Setenv("DISPLAY", ":"+d)
		return ":" + d
	case <-time.After(10 * time.Second):
		t.Fatal("Xvfb did not start")
	}
	return ""
}

// ScreenshotTo saves the whole X screen as PNG at path with ImageMagick's
// import.
func ScreenshotTo(path string) error {
	if b, err := exec.Command("import", "-window", "root", path).CombinedOutput(); err != nil {
		return fmt.Errorf("import: %w: %s", err, b)
	}
	return nil
}
