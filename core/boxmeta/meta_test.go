package boxmeta

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/paths"
)

// TestReadWrite: what Write writes Read returns; a missing box is
// ErrNotFound; a broken file is an *Error with a hint, and List returns
// the other boxes beside it.
func TestReadWrite(t *testing.T) {
	l := paths.Layout{Home: filepath.Join(t.TempDir(), "h")}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	want := Meta{Name: "web-1", Project: "/src/web", Network: config.NetworkBroker, BrokerPort: 42001,
		Created: time.Unix(1700000000, 0).UTC(), Saved: &Saved{Tag: "corral-suspend"}, HostPorts: []int{9229}}
	if err := Write(l, want); err != nil {
		t.Fatal(err)
	}
	got, err := Read(l, "web-1")
	if err != nil || got.Name != want.Name || got.Project != want.Project || got.BrokerPort != want.BrokerPort ||
		!got.Created.Equal(want.Created) || got.Saved == nil || got.Saved.Tag != want.Saved.Tag || len(got.HostPorts) != 1 {
		t.Fatalf("Read = %+v, %v; want %+v", got, err, want)
	}
	if _, err := Read(l, "none-1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing box: %v, want ErrNotFound", err)
	}

	if err := os.WriteFile(l.BoxMeta("bad-1"), []byte(`{"created": "\x1b[31mnot a time"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Read(l, "bad-1")
	var me *Error
	if !errors.As(err, &me) || me.Box != "bad-1" || strings.Contains(err.Error(), "\x1b") {
		t.Fatalf("broken file: %v, want an *Error with the content escaped", err)
	}
	if len(hint.All(err)) == 0 {
		t.Errorf("broken file: no hint in %v", err)
	}
	metas, err := List(l)
	if len(metas) != 1 || metas[0].Name != "web-1" {
		t.Errorf("List = %+v, want web-1 beside the broken file", metas)
	}
	if es := Errors(err); len(es) != 1 || es[0].Box != "bad-1" {
		t.Errorf("Errors(%v) = %+v, want bad-1's", err, es)
	}

	if err := Remove(l, "web-1"); err != nil {
		t.Fatal(err)
	}
	if err := Remove(l, "web-1"); err != nil {
		t.Errorf("removing a removed box: %v", err)
	}
	if _, err := Read(l, "web-1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("after Remove: %v, want ErrNotFound", err)
	}
}
