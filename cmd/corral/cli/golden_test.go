package cli

import (
	"context"
	"errors"
	"testing"

	"github.com/corral-dev/corral/core/golden"
)

type fakeGoldens struct {
	list    []golden.Golden
	removed []string
}

func (f *fakeGoldens) List(context.Context) ([]golden.Golden, error) { return f.list, nil }
func (f *fakeGoldens) Remove(_ context.Context, name string, force bool) error {
	if name == "golden-busy" && !force {
		return errors.New("golden image golden-busy is the origin of [web-1]")
	}
	f.removed = append(f.removed, name)
	return nil
}

func TestGoldenLs(t *testing.T) {
	fake := &fakeGoldens{list: []golden.Golden{{Name: "golden-4576f2bc1b3e", Status: "Stopped", Boxes: []string{"web-1", "api-2"}}}}
	for _, c := range []struct {
		tty  bool
		args []string
		want string
	}{
		{true, nil, "GOLDEN               STATUS   BOXES\ngolden-4576f2bc1b3e  Stopped  web-1,api-2\n"},
		{false, nil, "GOLDEN\tSTATUS\tBOXES\ngolden-4576f2bc1b3e\tStopped\tweb-1,api-2\n"},
		{false, []string{"--json"}, "{\n  \"schema\": \"corral.goldens/v1\",\n  \"goldens\": [\n    {\n      \"name\": \"golden-4576f2bc1b3e\",\n      \"status\": \"Stopped\",\n      \"boxes\": [\n        \"web-1\",\n        \"api-2\"\n      ]\n    }\n  ]\n}\n"},
	} {
		ios, _, out, errOut := Test(c.tty)
		cmd := NewCmdGoldenLs(&Factory{IO: ios}, func(o *GoldenLsOptions) error {
			o.Images = func() (goldenLister, error) { return fake, nil }
			return goldenLsRun(context.Background(), o)
		})
		if code, got, _ := execCmd(cmd, out, errOut, c.args...); code != 0 || got != c.want {
			t.Errorf("tty %v %q: %d\n%q\nwant\n%q", c.tty, c.args, code, got, c.want)
		}
	}
}

func TestGoldenRm(t *testing.T) {
	fake := &fakeGoldens{}
	run := func(args ...string) (int, string, string) {
		ios, _, out, errOut := Test(false)
		cmd := NewCmdGoldenRm(&Factory{IO: ios}, func(o *GoldenRmOptions) error {
			o.Images = func() (goldenRemover, error) { return fake, nil }
			return goldenRmRun(context.Background(), o)
		})
		return execCmd(cmd, out, errOut, args...)
	}
	if code, out, _ := run("golden-a", "golden-b"); code != 0 || out != "removed golden-a\nremoved golden-b\n" {
		t.Errorf("rm: %d %q", code, out)
	}
	if code, _, errOut := run("golden-busy"); code != 1 || errOut != "corral: golden image golden-busy is the origin of [web-1]\n" {
		t.Errorf("rm busy: %d %q", code, errOut)
	}
	if code, _, _ := run("-f", "golden-busy"); code != 0 || len(fake.removed) != 3 {
		t.Errorf("rm -f busy: %d %v", code, fake.removed)
	}
}
