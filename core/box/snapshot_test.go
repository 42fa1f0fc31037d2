package box

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/hint"
)

func TestPruneAuto(t *testing.T) {
	snaps := []Snapshot{
		snapshotOf("auto-20260103T000000Z"), snapshotOf("before-upgrade"),
		snapshotOf("auto-20260101T000000Z"), snapshotOf("auto-20260102T000000Z"),
	}
	tests := []struct {
		keep int
		want []string
	}{
		{3, nil},
		{2, []string{"auto-20260101T000000Z"}},
		{1, []string{"auto-20260101T000000Z", "auto-20260102T000000Z"}},
	}
	for _, tt := range tests {
		if got := PruneAuto(snaps, tt.keep); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("keep %d: %v, want %v", tt.keep, got, tt.want)
		}
	}
}

func TestSnapshotNames(t *testing.T) {
	if n := AutoSnapshotName(time.Date(2026, 1, 2, 15, 4, 5, 0, time.FixedZone("x", 3600))); n != "auto-20260102T140405Z" {
		t.Errorf("auto name %s", n)
	}
	if sn := snapshotOf("auto-20260102T140405Z"); !sn.Auto || sn.Created != time.Date(2026, 1, 2, 14, 4, 5, 0, time.UTC) {
		t.Errorf("%+v", sn)
	}
	if sn := snapshotOf("auto-later"); sn.Auto {
		t.Errorf("auto-later parsed as automatic: %+v", sn)
	}
	for name, ok := range map[string]bool{"before-upgrade": true, "v1.2_x": true, "auto-x": false, "": false, "-x": false, "a/b": false, "../x": false} {
		if err := CheckSnapshotName(name); (err == nil) != ok {
			t.Errorf("CheckSnapshotName(%q) = %v", name, err)
		}
	}
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// TestCloneSnapshots runs the vz backend with a plain copy in place of
// clonefile(2), which only macOS has.
func TestCloneSnapshots(t *testing.T) {
	root := t.TempDir()
	inst := filepath.Join(root, "lima", "b")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(inst, 0o700))
	must(os.WriteFile(filepath.Join(inst, "diffdisk"), []byte("v1"), 0o600))
	c := &cloneSnapshots{
		dir:     func(box string) string { return filepath.Join(root, "snapshots", box) },
		instDir: func(box string) string { return filepath.Join(root, "lima", box) },
		clone:   copyFile,
	}
	ctx := context.Background()
	must(c.create(ctx, "b", "one"))
	must(os.WriteFile(filepath.Join(inst, "diffdisk"), []byte("v2"), 0o600))
	must(os.WriteFile(filepath.Join(inst, "vz-efi"), []byte("efi"), 0o600))
	must(c.create(ctx, "b", "auto-20260101T000000Z"))
	snaps, err := c.list(ctx, "b")
	must(err)
	if len(snaps) != 2 || snaps[0].Name != "auto-20260101T000000Z" || !snaps[0].Auto || snaps[1].Name != "one" || snaps[1].Created.IsZero() {
		t.Fatalf("list %+v", snaps)
	}
	must(c.apply(ctx, "b", "one"))
	if b, _ := os.ReadFile(filepath.Join(inst, "diffdisk")); string(b) != "v1" {
		t.Errorf("diffdisk after restore: %q", b)
	}
	must(c.apply(ctx, "b", "auto-20260101T000000Z"))
	if b, _ := os.ReadFile(filepath.Join(inst, "diffdisk")); string(b) != "v2" {
		t.Errorf("diffdisk after second restore: %q", b)
	}
	must(c.remove(ctx, "b", "one"))
	if snaps, _ := c.list(ctx, "b"); len(snaps) != 1 {
		t.Errorf("after remove: %+v", snaps)
	}
	left, _ := os.ReadDir(inst)
	for _, e := range left {
		if strings.Contains(e.Name(), "restore") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
	if err := cloneFile(filepath.Join(inst, "diffdisk"), filepath.Join(root, "x")); err == nil && runtime.GOOS != "darwin" {
		t.Error("cloneFile succeeded off macOS")
	}
}

// snapLima adds `limactl snapshot` to fakeLima: tags per instance.
type snapLima struct {
	*fakeLima
	tags map[string][]string
}

func (f *snapLima) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	if len(args) < 2 || args[0] != "snapshot" {
		return f.fakeLima.command(ctx, name, args...)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, strings.Join(args, " "))
	box := args[len(args)-1]
	tag := ""
	if len(args) > 3 && args[2] == "--tag" {
		tag = args[3]
	}
	switch args[1] {
	case "list":
		return exec.Command("printf", "%s", strings.Join(f.tags[box], "\n")+"\n")
	case "create":
		f.tags[box] = append(f.tags[box], tag)
	case "delete":
		var keep []string
		for _, x := range f.tags[box] {
			if x != tag {
				keep = append(keep, x)
			}
		}
		f.tags[box] = keep
	}
	return exec.Command("true")
}

func newSnapService(t *testing.T, globalToml string) (*Service, boxmeta.Resolved, *snapLima) {
	t.Helper()
	f := &snapLima{fakeLima: &fakeLima{insts: map[string]string{}, fail: map[string]string{}}, tags: map[string][]string{}}
	s, r := newTestService(t, f.fakeLima)
	s.Lima.Command = f.command
	if globalToml != "" {
		if err := os.WriteFile(s.Layout.GlobalConfig(), []byte(globalToml), 0o600); err != nil {
			t.Fatal(err)
		}
		var err error
		if r, err = boxmeta.Resolve(s.Layout, boxmeta.ResolveOptions{Dir: r.Project.Dir, Platform: config.Platform{OS: "linux", Arch: "amd64"}}); err != nil {
			t.Fatal(err)
		}
	}
	return s, r, f
}

func TestAutoSnapshotKeepsTheNewest(t *testing.T) {
	s, r, f := newSnapService(t, "network = \"full\"\ngolden = false\nsnapshots = \"auto\"\nsnapshots_keep = 2\n")
	box := r.Project.Box
	clock := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	s.Now = func() time.Time { return clock }
	ctx := context.Background()
	if _, err := s.Up(ctx, r, UpOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(f.tags[box]) != 0 {
		t.Fatalf("a new box was snapshotted: %v", f.tags[box])
	}
	for i := 0; i < 3; i++ {
		clock = clock.Add(time.Hour)
		f.insts[box] = "Stopped"
		if _, err := s.Up(ctx, r, UpOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"auto-20260301T110000Z", "auto-20260301T120000Z"}
	if !reflect.DeepEqual(f.tags[box], want) {
		t.Errorf("snapshots %v, want %v", f.tags[box], want)
	}
	evs, err := audit.Read(s.Layout.AuditLog(), audit.Filter{Box: box})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range evs {
		if ev.Kind == audit.KindSnapshot {
			got = append(got, fmt.Sprintf("%v removed=%v", ev.Fields["name"], ev.Fields["removed"] == true))
		}
	}
	wantEv := []string{
		"auto-20260301T100000Z removed=false", "auto-20260301T110000Z removed=false",
		"auto-20260301T120000Z removed=false", "auto-20260301T100000Z removed=true",
	}
	if !reflect.DeepEqual(got, wantEv) {
		t.Errorf("audit %v, want %v", got, wantEv)
	}
}

func TestSnapshotsOffByDefault(t *testing.T) {
	s, r, f := newSnapService(t, "")
	ctx := context.Background()
	if _, err := s.Up(ctx, r, UpOptions{}); err != nil {
		t.Fatal(err)
	}
	f.insts[r.Project.Box] = "Stopped"
	if _, err := s.Up(ctx, r, UpOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(f.tags) != 0 {
		t.Errorf("snapshots taken with snapshots = off: %v", f.tags)
	}
}

func TestSnapshotCreateRestoreRemove(t *testing.T) {
	s, r, f := newSnapService(t, "")
	box := r.Project.Box
	ctx := context.Background()
	if _, err := s.Up(ctx, r, UpOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateSnapshot(ctx, box, "auto-mine"); err == nil {
		t.Error("a manual name with the auto- prefix was accepted")
	}
	name, err := s.CreateSnapshot(ctx, box, "clean")
	if err != nil || name != "clean" {
		t.Fatal(name, err)
	}
	if _, err := s.CreateSnapshot(ctx, box, "clean"); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("duplicate name: %v", err)
	}
	if err := s.RestoreSnapshot(ctx, box, "nope", nil); !errors.Is(err, ErrNoSnapshot) {
		t.Errorf("restore of a missing snapshot: %v", err)
	}
	cancelled := errors.New("cancelled")
	if err := s.RestoreSnapshot(ctx, box, "clean", func(sn Snapshot) error { return cancelled }); !errors.Is(err, cancelled) {
		t.Errorf("declined restore: %v", err)
	}
	if slicesContain(f.calls, "snapshot apply --tag clean "+box) {
		t.Error("a declined restore was applied")
	}
	if err := s.RestoreSnapshot(ctx, box, "clean", nil); err != nil {
		t.Fatal(err)
	}
	if !slicesContain(f.calls, "snapshot apply --tag clean "+box) {
		t.Errorf("calls %v", f.calls)
	}
	snaps, err := s.Snapshots(ctx, box)
	if err != nil || len(snaps) != 1 || snaps[0].Name != "clean" {
		t.Errorf("list %+v %v", snaps, err)
	}
	if err := s.RemoveSnapshot(ctx, box, "clean"); err != nil {
		t.Fatal(err)
	}
	if len(f.tags[box]) != 0 {
		t.Errorf("left %v", f.tags[box])
	}
	evs, _ := audit.Read(s.Layout.AuditLog(), audit.Filter{Box: box})
	kinds := map[audit.Kind]int{}
	for _, ev := range evs {
		kinds[ev.Kind]++
	}
	if kinds[audit.KindSnapshot] != 2 || kinds[audit.KindRestore] != 1 {
		t.Errorf("audit kinds %v", kinds)
	}
}

func TestRestoreRefusesARunningBox(t *testing.T) {
	s, r, f := newSnapService(t, "")
	box := r.Project.Box
	ctx := context.Background()
	if _, err := s.Up(ctx, r, UpOptions{}); err != nil {
		t.Fatal(err)
	}
	f.tags[box] = []string{"clean"}
	dir := filepath.Join(s.Layout.LimaHome(), box)
	_ = os.WriteFile(filepath.Join(dir, "ha.pid"), []byte(fmt.Sprint(os.Getpid())), 0o600)
	_ = os.WriteFile(filepath.Join(dir, "qemu.pid"), []byte(fmt.Sprint(os.Getpid())), 0o600)
	err := s.RestoreSnapshot(ctx, box, "clean", func(Snapshot) error { t.Error("asked to confirm a refused restore"); return nil })
	if !errors.Is(err, ErrBoxRunning) || !strings.Contains(hint.Of(err), "corral stop "+box) {
		t.Errorf("err = %v", err)
	}
	if _, err := s.CreateSnapshot(ctx, box, "x"); !errors.Is(err, ErrBoxRunning) {
		t.Errorf("create on a running box: %v", err)
	}
	for _, c := range f.calls {
		if strings.HasPrefix(c, "snapshot apply") || strings.HasPrefix(c, "snapshot create") {
			t.Errorf("ran %q on a running box", c)
		}
	}
}

func slicesContain(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// Lima 2.1+ names the disk "disk"; an instance it migrated keeps
// "diffdisk" with "disk" a link to it. The regular file is what a clone
// snapshot takes and restores.
func TestCloneSnapshotsLima2Layouts(t *testing.T) {
	for _, layout := range []string{"disk", "migrated"} {
		t.Run(layout, func(t *testing.T) {
			root := t.TempDir()
			inst := filepath.Join(root, "lima", "b")
			if err := os.MkdirAll(inst, 0o700); err != nil {
				t.Fatal(err)
			}
			disk := "disk"
			if layout == "migrated" {
				disk = "diffdisk"
				if err := os.Symlink("diffdisk", filepath.Join(inst, "disk")); err != nil {
					t.Fatal(err)
				}
			}
			write := func(v string) {
				if err := os.WriteFile(filepath.Join(inst, disk), []byte(v), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			write("v1")
			c := &cloneSnapshots{
				dir:     func(box string) string { return filepath.Join(root, "snapshots", box) },
				instDir: func(box string) string { return filepath.Join(root, "lima", box) },
				clone:   copyFile,
			}
			ctx := context.Background()
			if err := c.create(ctx, "b", "one"); err != nil {
				t.Fatal(err)
			}
			if fi, err := os.Lstat(filepath.Join(root, "snapshots", "b", "one", disk)); err != nil || !fi.Mode().IsRegular() {
				t.Fatalf("snapshot holds %s: %v, %v", disk, fi, err)
			}
			write("v2")
			if err := c.apply(ctx, "b", "one"); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(filepath.Join(inst, "disk")); string(b) != "v1" {
				t.Errorf("disk after restore: %q", b)
			}
			if layout == "migrated" {
				if fi, err := os.Lstat(filepath.Join(inst, "disk")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
					t.Errorf("the disk link was replaced: %v, %v", fi, err)
				}
			}
		})
	}
	if _, err := snapshotFiles(t.TempDir()); err == nil {
		t.Error("an instance without a disk was snapshotted")
	}
}
