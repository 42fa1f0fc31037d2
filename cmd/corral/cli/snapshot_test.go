package cli

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/box"
)

type fakeSnaps struct {
	snaps    []box.Snapshot
	restored string
	confirm  error // what confirm returned
}

func (f *fakeSnaps) Snapshots(context.Context, string) ([]box.Snapshot, error) { return f.snaps, nil }
func (f *fakeSnaps) CreateSnapshot(_ context.Context, _, name string) (string, error) {
	if name == "" {
		name = "auto-20260102T150405Z"
	}
	return name, nil
}
func (f *fakeSnaps) RemoveSnapshot(context.Context, string, string) error { return nil }
func (f *fakeSnaps) RestoreSnapshot(_ context.Context, _, name string, confirm func(box.Snapshot) error) error {
	for _, sn := range f.snaps {
		if sn.Name == name {
			if f.confirm = confirm(sn); f.confirm != nil {
				return f.confirm
			}
			f.restored = name
			return nil
		}
	}
	return box.ErrNoSnapshot
}

func runSnapshot(t *testing.T, fs *fakeSnaps, tty bool, stdin string, args ...string) (int, string, string) {
	t.Helper()
	io, in, out, errOut := Test(tty)
	in.WriteString(stdin)
	f := &Factory{IO: io}
	cmd := NewCmdSnapshot(f, func(verb string, o *SnapshotOptions) error {
		o.Service = func() (snapshotService, error) { return fs, nil }
		switch verb {
		case "ls":
			return snapshotLsRun(o)
		case "create":
			return snapshotCreateRun(o)
		case "restore":
			return snapshotRestoreRun(o)
		}
		return snapshotRmRun(o)
	})
	cmd.SetArgs(args)
	cmd.SetOut(out)
	cmd.SetErr(errOut)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	err := cmd.Execute()
	if err != nil {
		printError(errOut, err)
	}
	return exitCode(err), out.String(), errOut.String()
}

func someSnaps() *fakeSnaps {
	return &fakeSnaps{snaps: []box.Snapshot{
		{Name: "auto-20260102T150405Z", Created: time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC), Auto: true},
		{Name: "clean"},
	}}
}

func TestSnapshotLs(t *testing.T) {
	_, out, _ := runSnapshot(t, someSnaps(), true, "", "ls", "web-1")
	want := "SNAPSHOT               CREATED               KIND\n" +
		"auto-20260102T150405Z  2026-01-02T15:04:05Z  auto\n" +
		"clean                  -                     manual\n"
	if out != want {
		t.Errorf("got:\n%s\nwant:\n%s", out, want)
	}
	_, out, _ = runSnapshot(t, someSnaps(), false, "", "ls", "web-1")
	if want := "SNAPSHOT\tCREATED\tKIND\nauto-20260102T150405Z\t2026-01-02T15:04:05Z\tauto\nclean\t-\tmanual\n"; out != want {
		t.Errorf("not a terminal: %q, want %q", out, want)
	}
	_, out, _ = runSnapshot(t, someSnaps(), false, "", "ls", "web-1", "--json")
	if out != `{
  "schema": "corral.snapshots/v1",
  "snapshots": [
    {
      "name": "auto-20260102T150405Z",
      "created": "2026-01-02T15:04:05Z",
      "auto": true
    },
    {
      "name": "clean",
      "auto": false
    }
  ]
}`+"\n" {
		t.Errorf("json %s", out)
	}
	_, out, _ = runSnapshot(t, &fakeSnaps{}, true, "", "ls", "web-1")
	if out != "box web-1 has no snapshots\n" {
		t.Errorf("%q", out)
	}
}

func TestSnapshotCreate(t *testing.T) {
	_, out, _ := runSnapshot(t, someSnaps(), true, "", "create", "web-1")
	if out != "snapshot auto-20260102T150405Z of box web-1 created\n" {
		t.Errorf("%q", out)
	}
}

func TestSnapshotRestoreAsks(t *testing.T) {
	fs := someSnaps()
	code, out, errOut := runSnapshot(t, fs, true, "y\n", "restore", "web-1", "auto-20260102T150405Z")
	if code != 0 || fs.restored != "auto-20260102T150405Z" || out != "box web-1 restored to snapshot auto-20260102T150405Z\n" {
		t.Errorf("code %d restored %q out %q", code, fs.restored, out)
	}
	want := `Restoring box web-1 to snapshot auto-20260102T150405Z (taken 2026-01-02T15:04:05Z) discards everything written to
the box's disk since then: packages and tools installed in the box, files in
its home directory and box_dirs, and agent state kept inside the box.
The project directory is a host mount and is not changed.
To keep the current state first: corral snapshot create web-1 NAME
Restore box web-1 to auto-20260102T150405Z? [y/N] `
	if errOut != want {
		t.Errorf("prompt:\n%s\nwant:\n%s", errOut, want)
	}
}

func TestSnapshotRestoreDeclined(t *testing.T) {
	for _, answer := range []string{"\n", "n\n", "", "yep\n"} {
		fs := someSnaps()
		code, out, errOut := runSnapshot(t, fs, true, answer, "restore", "web-1", "clean")
		if code != 1 || fs.restored != "" || !errors.Is(fs.confirm, errDeclined) || out != "" || !strings.HasSuffix(errOut, "[y/N] nothing restored\n") {
			t.Errorf("answer %q: code %d restored %q out %q err %q", answer, code, fs.restored, out, errOut)
		}
	}
}

func TestSnapshotRestoreScripts(t *testing.T) {
	fs := someSnaps()
	code, _, errOut := runSnapshot(t, fs, false, "y\n", "restore", "web-1", "clean")
	if code != 1 || fs.restored != "" || errOut != "corral: restoring box web-1: refusing without confirmation (no terminal to ask on)\nhint: pass --yes to restore from a script\n" {
		t.Errorf("code %d err %q", code, errOut)
	}
	code, out, errOut := runSnapshot(t, fs, false, "", "restore", "web-1", "clean", "--yes")
	if code != 0 || fs.restored != "clean" || out != "box web-1 restored to snapshot clean\n" || errOut != "" {
		t.Errorf("code %d out %q err %q", code, out, errOut)
	}
}
