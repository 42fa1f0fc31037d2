package app

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAcquireLock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	release, err := acquireLock(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "app.lock"))
	if strings.TrimSpace(string(b)) != fmt.Sprint(os.Getpid()) {
		t.Errorf("lock file holds %q, want our pid", b)
	}
	// flock locks belong to the open file, so a second open in the same
	// process conflicts just like another process would.
	_, err = acquireLock(dir)
	if !errors.Is(err, ErrAlreadyRunning) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("second acquire: %v", err)
	}
	release()
	release2, err := acquireLock(dir)
	if err != nil {
		t.Fatalf("acquire after release: %v", err)
	}
	release2()
}
