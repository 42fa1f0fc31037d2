package box

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/paths"
)

func TestPlanGC(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	base := func() GCState {
		return GCState{
			Now:       now,
			MetaNames: []string{"live", "gone", "new", "stale-new", "corrupt"},
			Metas: map[string]boxmeta.Meta{
				"live":      {Name: "live", Golden: "golden-aaaaaaaaaaaa"},
				"gone":      {Name: "gone"},
				"new":       {Name: "new", Provisioning: true, Created: now.Add(-10 * time.Minute)},
				"stale-new": {Name: "stale-new", Provisioning: true, Created: now.Add(-2 * time.Hour)},
			},
			Instances: []string{"live", "orphan", "golden-aaaaaaaaaaaa", "golden-bbbbbbbbbbbb", "_config", "corrupt"},
			Brokers:   []BrokerProc{{PID: 20, Box: "live"}, {PID: 21, Box: "gone"}, {PID: 22, Box: "never"}},
			Logs: []GCFile{
				{Path: "/l/egress-old.jsonl", ModTime: now.Add(-15 * day)},
				{Path: "/l/egress-old.jsonl.1", ModTime: now.Add(-20 * day)},
				{Path: "/l/broker-old.log", ModTime: now.Add(-15 * day)},
				{Path: "/l/egress-recent.jsonl", ModTime: now.Add(-13 * day)},
				{Path: "/l/egress-live.jsonl", ModTime: now.Add(-30 * day)},
				{Path: "/l/audit.jsonl", ModTime: now.Add(-30 * day)},
				{Path: "/l/egress-x.jsonl.bak", ModTime: now.Add(-30 * day)},
			},
			Projects: []GCFile{
				{Path: "/p/live.approvals.json"}, {Path: "/p/old.approvals.json"}, {Path: "/p/old.approvals.json.lock"},
				{Path: "/p/old.toml"}, {Path: "/p/new.approvals.json"},
			},
		}
	}
	item := func(k GCKind, box, path string, pid int) GCItem {
		return GCItem{Kind: k, Box: box, Path: path, PID: pid}
	}
	strip := func(p GCPlan) []GCItem {
		var out []GCItem
		for _, it := range p.Items {
			it.Reason = ""
			out = append(out, it)
		}
		return out
	}
	common := []GCItem{
		item(GCMeta, "gone", "", 0),
		item(GCMeta, "stale-new", "", 0),
		item(GCBroker, "gone", "", 21),
		item(GCBroker, "never", "", 22),
		item(GCLog, "old", "/l/broker-old.log", 0),
		item(GCLog, "old", "/l/egress-old.jsonl", 0),
		item(GCLog, "old", "/l/egress-old.jsonl.1", 0),
		item(GCApprovals, "old", "/p/old.approvals.json", 0),
		item(GCApprovals, "old", "/p/old.approvals.json.lock", 0),
	}
	tests := []struct {
		name  string
		edit  func(*GCState)
		want  []GCItem
		notes int
	}{
		{"default", func(*GCState) {}, append([]GCItem{item(GCInstance, "orphan", "", 0)}, common...), 2},
		{"goldens", func(st *GCState) { st.Goldens = true },
			append([]GCItem{item(GCInstance, "orphan", "", 0), item(GCGolden, "golden-bbbbbbbbbbbb", "", 0)}, common...), 1},
		{"no brokers on macOS", func(st *GCState) { st.Brokers, st.BrokersUnknown = nil, "no /proc" },
			[]GCItem{item(GCInstance, "orphan", "", 0), common[0], common[1], common[4], common[5], common[6], common[7], common[8]}, 3},
		{"nothing", func(st *GCState) { *st = GCState{Now: now} }, nil, 0},
	}
	for _, tt := range tests {
		st := base()
		tt.edit(&st)
		p := PlanGC(st)
		if got := strip(p); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s:\n got %v\nwant %v", tt.name, got, tt.want)
		}
		if len(p.Notes) != tt.notes {
			t.Errorf("%s: notes %q", tt.name, p.Notes)
		}
		for _, it := range p.Items {
			if it.Reason == "" {
				t.Errorf("%s: %v has no reason", tt.name, it)
			}
		}
	}
}

func TestLogBox(t *testing.T) {
	for name, want := range map[string]string{
		"egress-web-3f2a1c.jsonl": "web-3f2a1c", "egress-a.jsonl.1": "a", "broker-b.log": "b", "broker-b.log.2": "b",
		"egress-.jsonl": "", "egress-a.jsonl.tmp": "", "audit.jsonl": "", "sessions.jsonl": "", "app.log": "",
	} {
		got, ok := logBox(name)
		if got != want || ok != (want != "") {
			t.Errorf("logBox(%q) = %q %v", name, got, ok)
		}
	}
}

func TestScanBrokers(t *testing.T) {
	type proc struct{ cmdline, environ string }
	procs := map[int]proc{
		14: {"/bin/corral\x00broker\x00--box\x00web\x00", "CORRAL_HOME=/h/x\x00"},
		10: {"/bin/corral\x00broker\x00--box\x00web\x00--listen\x00127.0.0.1:42001\x00", "PATH=/bin\x00CORRAL_HOME=/h\x00"},
		11: {"/bin/corral\x00broker\x00--box=api\x00", "CORRAL_HOME=/h\x00"},
		12: {"/bin/corral\x00broker\x00--box\x00other\x00", "CORRAL_HOME=/h2\x00"},
		13: {"/bin/corral\x00up\x00--box\x00web\x00", "CORRAL_HOME=/h\x00"},
	}
	split := func(s string) []string { return strings.Split(strings.TrimSuffix(s, "\x00"), "\x00") }
	pt := procTable{
		pids: func() ([]int, error) {
			out := []int{99} // gone between the listing and the read
			for pid := range procs {
				out = append(out, pid)
			}
			return out, nil
		},
		argv: func(pid int) ([]string, error) {
			p, ok := procs[pid]
			if !ok {
				return nil, os.ErrNotExist
			}
			return split(p.cmdline), nil
		},
		environ: func(pid int) ([]string, error) { return split(procs[pid].environ), nil },
	}
	got := scanBrokers(pt, "/h")
	want := []BrokerProc{{PID: 10, Box: "web"}, {PID: 11, Box: "api"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%v, want %v", got, want)
	}
	// The real table reads this test process, which is no broker.
	for _, b := range scanBrokers(hostProcs, "/h") {
		t.Errorf("found a broker on the host: %+v", b)
	}
}

func TestGCRemoves(t *testing.T) {
	f := &fakeLima{insts: map[string]string{}, fail: map[string]string{}}
	s, r := newTestService(t, f)
	ctx := context.Background()
	if _, err := s.Up(ctx, r, UpOptions{}); err != nil {
		t.Fatal(err)
	}
	box := r.Project.Box
	f.made("orphan")
	_ = os.MkdirAll(filepath.Join(s.Layout.LimaHome(), "half"), 0o700) // no lima.yaml
	if err := boxmeta.Write(s.Layout, boxmeta.Meta{Name: "gone"}); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-15 * 24 * time.Hour)
	for _, p := range []string{s.Layout.EgressLog("gone"), s.Layout.EgressLog(box)} {
		_ = os.WriteFile(p, []byte("{}\n"), 0o600)
		_ = os.Chtimes(p, old, old)
	}
	plan, err := s.PlanGC(false)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range plan.Items {
		got = append(got, string(it.Kind)+" "+it.Box)
	}
	want := []string{"instance half", "instance orphan", "metadata gone", "log gone"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("plan %v, want %v", got, want)
	}
	// A box created between planning and removal is left alone.
	if err := boxmeta.Write(s.Layout, boxmeta.Meta{Name: "orphan"}); err != nil {
		t.Fatal(err)
	}
	done, err := s.GC(ctx, plan)
	if err != nil {
		t.Fatal(err)
	}
	if len(done) != 3 {
		t.Errorf("removed %v", done)
	}
	if _, ok := f.insts["orphan"]; !ok {
		t.Error("the re-created orphan was removed")
	}
	if _, err := os.Stat(filepath.Join(s.Layout.LimaHome(), "half")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("half-created dir left: %v", err)
	}
	if _, err := boxmeta.Read(s.Layout, "gone"); !errors.Is(err, boxmeta.ErrNotFound) {
		t.Errorf("metadata left: %v", err)
	}
	if _, err := os.Stat(s.Layout.EgressLog(box)); err != nil {
		t.Errorf("a live box's log was removed: %v", err)
	}
	evs, _ := audit.Read(s.Layout.AuditLog(), audit.Filter{})
	if last := evs[len(evs)-1]; last.Kind != audit.KindGC || len(last.Fields["removed"].([]any)) != 3 {
		t.Errorf("audit %+v", last)
	}
}

func TestPlanGCTemps(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	p := PlanGC(GCState{Now: now, Temps: []GCFile{
		{Path: "/b/.web.json.tmp-1", ModTime: now.Add(-time.Hour)},
		{Path: "/b/.web.json.tmp-2", ModTime: now.Add(-time.Minute)}, // a write in progress
	}})
	if len(p.Items) != 1 || p.Items[0].Kind != GCTemp || p.Items[0].Path != "/b/.web.json.tmp-1" {
		t.Errorf("items %+v", p.Items)
	}
}

// TestGCStateFindsTemps: temps in corral's state dirs are found; the agents
// directory (the agent's own files) is not looked at.
func TestGCStateFindsTemps(t *testing.T) {
	l := paths.Layout{Home: t.TempDir()}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{
		filepath.Join(l.BoxesDir(), ".web.json.tmp-1"),
		filepath.Join(l.ProjectsDir(), ".web.approvals.json.tmp-2"),
		filepath.Join(l.AgentDir("claude"), ".settings.json.tmp-3"),
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s := &Service{Layout: l}
	st, err := s.GCState(false)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Temps) != 2 {
		t.Errorf("temps %+v, want the boxes and projects ones", st.Temps)
	}
}

func TestPendingRequests(t *testing.T) {
	l := paths.Layout{Home: t.TempDir()}
	proj := t.TempDir()
	if err := os.WriteFile(filepath.Join(proj, ".corral.toml"), []byte("egress = [\"a.example.test\", \"b.example.test\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if n := len(boxmeta.PendingRequests(l, "web-1", proj)); n != 2 {
		t.Errorf("pending = %d, want 2", n)
	}
	if err := os.MkdirAll(l.ProjectsDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(l.ProjectConfig("web-1"), []byte("egress = [\"a.example.test\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if n := len(boxmeta.PendingRequests(l, "web-1", proj)); n != 1 {
		t.Errorf("pending after the trusted layer allows one = %d, want 1", n)
	}
	if n := len(boxmeta.PendingRequests(l, "web-1", "")); n != 0 {
		t.Errorf("no project: %d", n)
	}
}
