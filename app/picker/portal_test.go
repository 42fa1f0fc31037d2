package picker_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/corral-dev/corral/app/picker"
	"github.com/corral-dev/corral/core/desktoptest"
	"github.com/corral-dev/corral/core/hint"
)

func TestPortal(t *testing.T) {
	addr := desktoptest.StartBus(t)
	dir := t.TempDir()
	tests := []struct {
		name    string
		code    uint32
		uris    []string
		want    string
		wantErr error
	}{
		{name: "chosen", code: 0, uris: []string{"file://" + dir + "/my%20project"}, want: dir + "/my project"},
		{name: "cancelled", code: 1, wantErr: picker.ErrCancelled},
		{name: "ended", code: 2},
		{name: "not a file uri", code: 0, uris: []string{"https://example.test/x"}},
		{name: "two folders", code: 0, uris: []string{"file:///a", "file:///b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := desktoptest.StartFakePortal(desktoptest.Conn(t, addr))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			f.Answer(tt.code, tt.uris...)
			client := desktoptest.Conn(t, addr)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			got, err := picker.Portal{Conn: client}.Pick(ctx)
			switch {
			case tt.want != "":
				if err != nil || got != tt.want {
					t.Fatalf("Pick = %q, %v; want %q", got, err, tt.want)
				}
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Pick = %q, %v; want %v", got, err, tt.wantErr)
				}
			default:
				if err == nil || errors.Is(err, picker.ErrCancelled) || errors.Is(err, picker.ErrUnavailable) {
					t.Fatalf("Pick = %q, %v; want an error", got, err)
				}
			}
			if opts := f.Options(); len(opts) != 1 || opts[0]["directory"].Value() != true {
				t.Errorf("OpenFile options %v, want directory = true", opts)
			}
		})
	}
}

// TestPortalUnavailable: no portal on the bus is ErrUnavailable (the chain
// goes on to zenity and kdialog), and with none of them either the error
// names the command-line way.
func TestPortalUnavailable(t *testing.T) {
	addr := desktoptest.StartBus(t)
	client := desktoptest.Conn(t, addr)
	_, err := picker.Portal{Conn: client}.Pick(context.Background())
	if !errors.Is(err, picker.ErrUnavailable) {
		t.Fatalf("no portal: %v", err)
	}
	none := func(string) (string, error) { return "", exec.ErrNotFound }
	chain := picker.Chain{picker.Portal{Conn: client}, picker.Command{Name: "zenity", LookPath: none}}
	_, err = chain.Pick(context.Background())
	if !errors.Is(err, picker.ErrUnavailable) || hint.Of(err) == "" {
		t.Fatalf("chain: %v (hint %q)", err, hint.Of(err))
	}
	if want := "no folder chooser available (tried no desktop portal on the session bus; zenity not found)"; err.Error() != want {
		t.Errorf("chain error %q, want %q", err, want)
	}
}

// TestCommandFallback: a zenity-like program's answer, and its exit 1 as
// a cancel.
func TestCommandFallback(t *testing.T) {
	bin := t.TempDir()
	script := filepath.Join(bin, "zenity")
	write := func(body string) {
		if err := os.WriteFile(script, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	look := func(string) (string, error) { return script, nil }
	c := picker.Zenity()
	c.LookPath = look
	write("printf '%s\\n' /home/u/src/web\n")
	if got, err := c.Pick(context.Background()); err != nil || got != "/home/u/src/web" {
		t.Errorf("Pick = %q, %v", got, err)
	}
	write("exit 1\n")
	if _, err := c.Pick(context.Background()); !errors.Is(err, picker.ErrCancelled) {
		t.Errorf("cancel: %v", err)
	}
	write("printf '/a\\n/b\\n'\n")
	if got, err := c.Pick(context.Background()); err == nil {
		t.Errorf("two lines accepted: %q", got)
	}
}
