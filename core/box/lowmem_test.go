package box

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/boxstate"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/qemu/qemutest"
	"github.com/corral-dev/corral/core/qemuwrap"
)

func idleBox(name string, idle time.Duration, idleStop string) Status {
	return Status{Meta: boxmeta.Meta{Name: name, VMType: config.VMTypeQEMU, IdleStop: idleStop}, State: boxstate.Running, Idle: idle}
}

// The low-memory rule's decision: nothing unless available memory is
// under a set threshold; then the running qemu boxes with no session,
// idle long enough and not kept up (idle_stop "0"), longest idle first.
func TestLowMemorySaves(t *testing.T) {
	old := idleBox("old-1", 3*time.Hour, "30m")
	mid := idleBox("mid-1", 20*time.Minute, "30m")
	mid2 := idleBox("mid-2", 20*time.Minute, "30m")
	fresh := idleBox("fresh-1", time.Minute, "30m")       // idle < LowMemoryMinIdle
	shortStop := idleBox("short-1", 90*time.Second, "1m") // idle_stop under the minimum: due
	kept := idleBox("kept-1", 5*time.Hour, "0s")          // idle_stop "0"
	busy := idleBox("busy-1", 4*time.Hour, "30m")         // a live session
	busy.Live = 1
	vz := idleBox("vz-1", 4*time.Hour, "30m")
	vz.VMType = config.VMTypeVZ
	stopped := idleBox("stopped-1", 4*time.Hour, "30m")
	stopped.State = boxstate.Stopped
	all := []Status{fresh, mid2, old, shortStop, kept, busy, vz, stopped, mid}

	for _, tc := range []struct {
		name             string
		avail, threshold uint64
		boxes            []Status
		short            bool
		want             []string
	}{
		{"off", 1, 0, all, false, nil},
		{"unknown available", 0, 2 * gib, all, false, nil},
		{"enough memory", 3 * gib, 2 * gib, all, false, nil},
		{"exactly the threshold", 2 * gib, 2 * gib, all, false, nil},
		{"short: least recently used first, ties by name", gib, 2 * gib, all, true, []string{"old-1", "mid-1", "mid-2", "short-1"}},
		{"short, no candidate", gib, 2 * gib, []Status{fresh, kept, busy, vz, stopped}, true, nil},
	} {
		d := LowMemorySaves(tc.boxes, tc.avail, tc.threshold)
		if d.Short() != tc.short || !slices.Equal(d.Save, tc.want) || d.Available != tc.avail || d.Threshold != tc.threshold {
			t.Errorf("%s: %+v (short %v), want short %v save %v", tc.name, d, d.Short(), tc.short, tc.want)
		}
	}
}

// balloonQemu points the rig's qemu.pid at a process whose command line
// has corral's balloon, as the wrapper's qemu does.
func balloonQemu(t *testing.T, g *suspendRig) {
	cmd := exec.Command("sh", "-c", "sleep 60; :", "qemu", "-device", "virtio-balloon-pci,id=corral-balloon,free-page-reporting=on")
	must(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	must(t, os.WriteFile(filepath.Join(g.dir, "qemu.pid"), []byte(fmt.Sprint(cmd.Process.Pid)), 0o600))
}

// The sweep under low memory saves the idle box (idle_action "stop",
// idle_stop not yet out) for low memory: the metadata says why and that
// the VM had the balloon, so its resume asks for one; the audit log has
// low-memory-save with the numbers. With enough memory the same box is
// left alone; a box idle for less than the minimum too.
func TestSweepLowMem(t *testing.T) {
	for _, tc := range []struct {
		name      string
		avail     uint64
		idle      time.Duration
		wantSaved bool
	}{
		{"low memory, idle 1h", gib, time.Hour, true},
		{"enough memory, idle 1h", 3 * gib, time.Hour, false},
		{"low memory, idle 1m", gib, time.Minute, false},
	} {
		func() {
			g := newSuspendRig(t)
			must(t, os.WriteFile(g.s.Layout.GlobalConfig(), []byte("network = \"full\"\ngolden = false\nsave_when_free_below = \"2GiB\"\n"), 0o600))
			g.s.AvailableMemory = func() (uint64, error) { return tc.avail, nil }
			balloonQemu(t, g)
			m := g.meta()
			m.IdleAction, m.IdleStop, m.LastActivity = config.IdleActionStop, "2h", time.Now().Add(-tc.idle)
			must(t, boxmeta.Write(g.s.Layout, m))
			// Activity files are as old as the last activity.
			_ = os.Chtimes(g.s.Layout.EgressLog(g.box), m.LastActivity, m.LastActivity)

			got, err := g.s.Sweep(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			saved := g.meta().Saved
			evs := auditKinds(t, g.s.Layout, audit.KindLowMemorySave)
			if !tc.wantSaved {
				if len(got) != 0 || saved != nil || len(evs) != 0 {
					t.Fatalf("%s: Sweep = %v, saved %+v, audit %v; want nothing done", tc.name, got, saved, evs)
				}
				return
			}
			if !slices.Equal(got, []string{g.box}) || saved == nil || saved.Reason != boxmeta.SavedLowMemory || !saved.Balloon {
				t.Fatalf("%s: Sweep = %v, saved %+v", tc.name, got, saved)
			}
			if len(evs) != 1 || evs[0].Box != g.box || evs[0].Fields[audit.FieldAvailableBytes] != float64(gib) || evs[0].Fields[audit.FieldThresholdBytes] != float64(2*gib) {
				t.Errorf("audit %+v", evs)
			}
			if n := len(auditKinds(t, g.s.Layout, audit.KindIdleStop)); n != 0 {
				t.Errorf("%d idle-stop events: the box was stopped, not saved", n)
			}
			// The resume rebuilds the machine the state was saved from.
			p, err := qemuwrap.NewPlan(qemutest.LimaLaunch(t, g.s.Layout.LimaHome(), g.box), g.s.Layout, "/usr/bin/corral")
			if err != nil || p.Options.LoadVM != SuspendTag || !p.Options.Balloon {
				t.Errorf("%s: resume plan %+v, %v", tc.name, p.Options, err)
			}
		}()
	}
}

// A save records whether the VM had the balloon; one without it (a VM
// started before corral added it) resumes without one.
func TestSaveRecordsNoBalloon(t *testing.T) {
	g := newSuspendRig(t) // qemu.pid: the test process, no balloon
	must(t, g.s.Save(context.Background(), g.box, audit.KindSave))
	if s := g.meta().Saved; s == nil || s.Balloon || s.Reason != "" {
		t.Fatalf("saved %+v", s)
	}
	p, err := qemuwrap.NewPlan(qemutest.LimaLaunch(t, g.s.Layout.LimaHome(), g.box), g.s.Layout, "/usr/bin/corral")
	if err != nil || p.Options.LoadVM != SuspendTag || p.Options.Balloon {
		t.Errorf("resume plan %+v, %v", p.Options, err)
	}
}
