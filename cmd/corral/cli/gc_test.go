package cli

import (
	"context"
	"testing"

	"github.com/corral-dev/corral/core/box"
)

type fakeGC struct {
	plan box.GCPlan
	ran  bool
}

func (f *fakeGC) PlanGC(bool) (box.GCPlan, error) { return f.plan, nil }
func (f *fakeGC) GC(_ context.Context, p box.GCPlan) ([]box.GCItem, error) {
	f.ran = true
	return p.Items, nil
}

func runGC(t *testing.T, fg *fakeGC, args ...string) (string, string) {
	t.Helper()
	io, _, out, errOut := Test(true)
	cmd := NewCmdGC(&Factory{IO: io}, func(o *GCOptions) error {
		o.Service = func() (gcService, error) { return fg, nil }
		return gcRun(o)
	})
	cmd.SetArgs(args)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	return out.String(), errOut.String()
}

func TestGC(t *testing.T) {
	plan := box.GCPlan{
		Items: []box.GCItem{
			{Kind: box.GCInstance, Box: "orphan", Reason: "Lima instance without box metadata"},
			{Kind: box.GCBroker, Box: "gone", PID: 42, Reason: "broker of a box that is gone"},
			{Kind: box.GCLog, Box: "old", Path: "/h/logs/egress-old.jsonl", Reason: "log of a deleted box, untouched for 15 days"},
		},
		Notes: []string{"1 golden image(s) no box uses: golden-aaaaaaaaaaaa (corral gc --goldens removes them; the next new box rebuilds one)"},
	}
	fg := &fakeGC{plan: plan}
	out, errOut := runGC(t, fg, "--dry-run")
	want := `would remove instance orphan: Lima instance without box metadata
would remove broker pid 42 (box gone): broker of a box that is gone
would remove log /h/logs/egress-old.jsonl: log of a deleted box, untouched for 15 days
`
	if fg.ran || out != want || errOut != "note: "+plan.Notes[0]+"\n" {
		t.Errorf("dry run (ran %v):\n%s\nerr %q", fg.ran, out, errOut)
	}
	out, _ = runGC(t, fg)
	if !fg.ran || out != `removed instance orphan: Lima instance without box metadata
removed broker pid 42 (box gone): broker of a box that is gone
removed log /h/logs/egress-old.jsonl: log of a deleted box, untouched for 15 days
` {
		t.Errorf("gc:\n%s", out)
	}
	out, _ = runGC(t, &fakeGC{}, "-n")
	if out != "nothing to remove\n" {
		t.Errorf("%q", out)
	}
	out, _ = runGC(t, &fakeGC{}, "-n", "--json")
	if out != `{"schema":"corral.gc-plan/v1","items":[]}`+"\n" {
		t.Errorf("%q", out)
	}
}
