package box

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/paths"
)

// TestToApprove: a box's pending requests judged, narrowed by KEY=ENTRY,
// refused ones never written.
func TestToApprove(t *testing.T) {
	l := paths.Layout{Home: filepath.Join(t.TempDir(), "h")}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	proj, _ := filepath.EvalSymlinks(t.TempDir())
	if err := os.WriteFile(filepath.Join(proj, ".corral.toml"), []byte("egress = [\"api.example.test\", \"*.com\"]\nports = [\"3000\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := config.Platform{OS: "linux", Arch: "amd64"}
	q, err := ToApprove(l, p, "", proj, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Pending) != 3 || len(q.Refused()) != 1 || q.Refused()[0].Selector() != "egress=*.com" {
		t.Fatalf("pending %+v, refused %+v", q.Pending, q.Refused())
	}
	if _, err := ToApprove(l, p, "", proj, []string{"egress=other.example.test"}); err == nil || !strings.Contains(err.Error(), "no pending request") {
		t.Errorf("unknown selector: %v", err)
	}
	only, err := ToApprove(l, p, "", proj, []string{"ports=3000", "ports=3000", "egress=API.example.test"})
	if err != nil || len(only.Pending) != 2 || only.Pending[0].Selector() != "ports=3000" {
		t.Fatalf("narrowed: %+v, %v", only.Pending, err)
	}
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	if err := q.Approve(l, q.Refused(), now); err == nil {
		t.Error("a refused request was approved")
	}
	if err := only.Approve(l, only.Pending, now); err != nil {
		t.Fatal(err)
	}
	after, err := ToApprove(l, p, "", proj, nil)
	if err != nil || len(after.Pending) != 1 || after.Pending[0].Selector() != "egress=*.com" {
		t.Errorf("after approving: %+v, %v", after.Pending, err)
	}
}
