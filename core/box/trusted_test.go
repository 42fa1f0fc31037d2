package box

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/paths"
)

// TestWriteTrusted: the audit record first, then the trusted layer; an
// audit log that cannot be written means nothing is written.
func TestWriteTrusted(t *testing.T) {
	l := paths.Layout{Home: filepath.Join(t.TempDir(), "h")}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	r, err := boxmeta.Resolve(l, boxmeta.ResolveOptions{Dir: t.TempDir(), Platform: config.Platform{OS: "linux", Arch: "amd64"}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	g := Grant{Entries: map[string][]string{"ports": {"3000"}, "egress": {"api.example.test"}}, Why: "because", Who: "corral test",
		Audit: map[string]any{"request": "h1"}, Op: "test", Done: "granted"}

	// The audit log cannot be opened (a directory stands in its place):
	// nothing reaches the trusted layer.
	if err := os.Mkdir(l.AuditLog(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := WriteTrusted(l, r, g, now); err == nil {
		t.Fatal("WriteTrusted succeeded without its audit record")
	}
	if _, err := os.Stat(l.ProjectConfig(r.Project.Box)); !os.IsNotExist(err) {
		t.Fatalf("the trusted layer was written without an audit record: %v", err)
	}
	if err := os.Remove(l.AuditLog()); err != nil {
		t.Fatal(err)
	}

	if err := WriteTrusted(l, r, g, now); err != nil {
		t.Fatal(err)
	}
	evs, err := audit.Read(l.AuditLog(), audit.Filter{Box: r.Project.Box})
	if err != nil || len(evs) != 1 {
		t.Fatalf("audit events %+v, %v", evs, err)
	}
	f := evs[0].Fields
	if evs[0].Kind != audit.KindAllow || f["scope"] != "trusted" || f["request"] != "h1" {
		t.Errorf("audit event %+v", evs[0])
	}
	if got, _ := f["entries"].([]any); len(got) != 2 || got[0] != "api.example.test" || got[1] != "3000" {
		t.Errorf("audit entries %v, want egress then ports (config.RequestKeys order)", f["entries"])
	}
	b, err := os.ReadFile(l.ProjectConfig(r.Project.Box))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"api.example.test", `"3000"`, "corral test", "because"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("trusted layer lacks %q:\n%s", want, b)
		}
	}

	// A key corral does not write is refused before anything is recorded.
	bad := g
	bad.Entries = map[string][]string{"mounts": {"/"}}
	if err := WriteTrusted(l, r, bad, now); err == nil || !strings.Contains(err.Error(), "nothing was granted") {
		t.Errorf("mounts: %v", err)
	}
	if evs, _ := audit.Read(l.AuditLog(), audit.Filter{}); len(evs) != 1 {
		t.Errorf("%d audit events after a refused key, want 1", len(evs))
	}
}
