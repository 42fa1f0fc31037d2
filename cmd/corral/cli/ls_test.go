package cli

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/boxstate"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/gitwatch"
	"github.com/corral-dev/corral/core/remotebox"
)

type fakeLister []box.Status

func (f fakeLister) List() ([]box.Status, error) { return f, nil }

func TestLsTable(t *testing.T) {
	list := fakeLister{
		{Meta: boxmeta.Meta{Name: "web-3f2a1c", Project: "/src/web", Network: config.NetworkBroker, MemoryCap: 4 << 30, CPUs: 2,
			Ports: []config.Port{{Host: 3000, Guest: 3000}, {Host: 8080, Guest: 80}}},
			State: boxstate.Running, MemBytes: 1 << 30, Live: 1},
		{Meta: boxmeta.Meta{Name: "api-77aa01", Project: "/src/my api", Network: config.NetworkOffline, MemoryCap: 2 << 30, CPUs: 1},
			State: boxstate.Stopped},
	}
	for _, c := range []struct {
		tty  bool
		want string
	}{
		{true, "" +
			"BOX         STATE    MEMORY       CPUS  IDLE  SESSIONS  NETWORK  PORTS         PROJECT\n" +
			"web-3f2a1c  Running  1GiB / 4GiB  2     -     1         broker   3000,8080:80  /src/web\n" +
			"api-77aa01  Stopped  - / 2GiB     1     -     0         offline  -             /src/my api\n"},
		{false, "" +
			"BOX\tSTATE\tMEMORY\tCPUS\tIDLE\tSESSIONS\tNETWORK\tPORTS\tPROJECT\n" +
			"web-3f2a1c\tRunning\t1GiB / 4GiB\t2\t-\t1\tbroker\t3000,8080:80\t/src/web\n" +
			"api-77aa01\tStopped\t- / 2GiB\t1\t-\t0\toffline\t-\t/src/my api\n"},
	} {
		ios, _, out, errOut := Test(c.tty)
		cmd := NewCmdLs(&Factory{IO: ios}, func(o *LsOptions) error {
			o.Service = func() (boxLister, error) { return list, nil }
			return lsRun(o)
		})
		if code, got, _ := execCmd(cmd, out, errOut); code != 0 || got != c.want {
			t.Errorf("tty %v: %d\n%q\nwant\n%q", c.tty, code, got, c.want)
		}
	}
}

func TestLsMarksPendingRequests(t *testing.T) {
	list := fakeLister{
		{Meta: boxmeta.Meta{Name: "web-3f2a1c", Project: "/src/web", Network: config.NetworkBroker, MemoryCap: 4 << 30, CPUs: 2},
			State: boxstate.Stopped},
	}
	ios, _, out, errOut := Test(false)
	cmd := NewCmdLs(&Factory{IO: ios}, func(o *LsOptions) error {
		o.Service = func() (boxLister, error) { return list, nil }
		o.Pending = func(name, project string) (boxmeta.OpenRequests, error) {
			return boxmeta.OpenRequests{Pending: make([]config.RepoRequest, 3), Refused: make([]config.RepoRequest, 1)}, nil
		}
		return lsRun(o)
	})
	code, got, e := execCmd(cmd, out, errOut, []string{}...) // not nil: cobra would read the test binary's flags
	if code != 0 {
		t.Fatal(code, e)
	}
	goldenFile(t, "ls-requests.txt", got)
	out.Reset()
	code, got, e = execCmd(cmd, out, errOut, "--json")
	if code != 0 {
		t.Fatal(code, e)
	}
	goldenFile(t, "ls-requests.json", got)
}

func TestLsSaysLearning(t *testing.T) {
	list := fakeLister{
		{Meta: boxmeta.Meta{Name: "web-3f2a1c", Project: "/src/web", Network: config.NetworkBroker, MemoryCap: 4 << 30, CPUs: 2},
			State: boxstate.Running, LearningUntil: fixedNow},
	}
	ios, _, out, errOut := Test(false)
	cmd := NewCmdLs(&Factory{IO: ios}, func(o *LsOptions) error {
		o.Service = func() (boxLister, error) { return list, nil }
		return lsRun(o)
	})
	want := "BOX\tSTATE\tMEMORY\tCPUS\tIDLE\tSESSIONS\tNETWORK\tPORTS\tPROJECT\n" +
		"web-3f2a1c\tRunning\t- / 4GiB\t2\t-\t0\tlearning\t-\t/src/web\n"
	if code, got, _ := execCmd(cmd, out, errOut); code != 0 || got != want {
		t.Errorf("%d\n%q\nwant\n%q", code, got, want)
	}
}

// A stopped box whose VM state is saved shows as Saved.
func TestLsShowsSaved(t *testing.T) {
	list := fakeLister{
		{Meta: boxmeta.Meta{Name: "api-77aa01", Project: "/src/api", Network: config.NetworkOffline, MemoryCap: 2 << 30, CPUs: 1,
			Saved: &boxmeta.Saved{Tag: box.SuspendTag}}, State: boxstate.Stopped},
	}
	ios, _, out, errOut := Test(false)
	cmd := NewCmdLs(&Factory{IO: ios}, func(o *LsOptions) error {
		o.Service = func() (boxLister, error) { return list, nil }
		return lsRun(o)
	})
	want := "BOX\tSTATE\tMEMORY\tCPUS\tIDLE\tSESSIONS\tNETWORK\tPORTS\tPROJECT\n" +
		"api-77aa01\tSaved\t- / 2GiB\t1\t-\t0\toffline\t-\t/src/api\n"
	if code, got, _ := execCmd(cmd, out, errOut); code != 0 || got != want {
		t.Errorf("%d\n%q\nwant\n%q", code, got, want)
	}
}

// fillAll sets every field below v, recursively, to a value that is not
// zero (a string, 1, true, a time, one element of a slice, an allocated
// pointer), so that every key a type can print is printed.
func fillAll(v reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(fixedNow))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillAll(v.Field(i))
			}
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillAll(v.Elem())
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fillAll(v.Index(0))
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	}
}

// TestLsJSONReadByTheMenu: what `corral ls --json` prints is what the
// menu's reader of a remote host (core/remotebox) decodes, with every
// field of the box status set (a field added later is printed too, and
// the reader must still take the answer).
func TestLsJSONReadByTheMenu(t *testing.T) {
	var full box.Status
	fillAll(reflect.ValueOf(&full).Elem())
	full.Name, full.Project, full.Network, full.State = "web-3f2a1c", "/src/my web", config.NetworkBroker, boxstate.Stopped
	full.ProvisionError, full.Provisioning = "", false
	full.MemBytes, full.MemoryCap, full.Live, full.Idle = 1<<30, 4<<30, 2, 5*time.Minute
	list := fakeLister{full, {Meta: boxmeta.Meta{Name: "api-77aa01", Project: "rel"}, State: boxstate.Running}}
	ios, _, out, errOut := Test(false)
	cmd := NewCmdLs(&Factory{IO: ios}, func(o *LsOptions) error {
		o.Service = func() (boxLister, error) { return list, nil }
		return lsRun(o)
	})
	code, got, _ := execCmd(cmd, out, errOut, "--json")
	if code != 0 {
		t.Fatal(code)
	}
	boxes, err := remotebox.DecodeList([]byte(got))
	if err != nil {
		t.Fatalf("%v\n%s", err, got)
	}
	want := []remotebox.Box{
		{Name: "api-77aa01", State: boxstate.Running},
		{Name: "web-3f2a1c", Project: "/src/my web", State: boxstate.Saved, MemBytes: 1 << 30, PeakBytes: 1, MemCapBytes: 4 << 30,
			Idle: 5 * time.Minute, Sessions: 2, Broker: true, LearningUntil: fixedNow},
	}
	if len(boxes) != 2 || !reflect.DeepEqual(boxes[0], want[0]) || !reflect.DeepEqual(boxes[1], want[1]) {
		t.Errorf("decoded\n%+v\nwant\n%+v", boxes, want)
	}
}

// TestLsNamesTheFailedStep: a box whose boot provisioning failed is Failed
// in the table, and the step is named under it.
func TestLsNamesTheFailedStep(t *testing.T) {
	list := fakeLister{
		{Meta: boxmeta.Meta{Name: "web-3f2a1c", Project: "/src/web", Network: config.NetworkBroker, MemoryCap: 4 << 30, CPUs: 2,
			ProvisionError: "provisioning box web-3f2a1c failed in guest/provision/40-network.sh"},
			State: boxstate.Running},
	}
	ios, _, out, errOut := Test(false)
	cmd := NewCmdLs(&Factory{IO: ios}, func(o *LsOptions) error {
		o.Service = func() (boxLister, error) { return list, nil }
		return lsRun(o)
	})
	want := "BOX\tSTATE\tMEMORY\tCPUS\tIDLE\tSESSIONS\tNETWORK\tPORTS\tPROJECT\n" +
		"web-3f2a1c\tFailed\t- / 4GiB\t2\t-\t0\tbroker\t-\t/src/web\n" +
		"! web-3f2a1c: provisioning box web-3f2a1c failed in guest/provision/40-network.sh (corral up web-3f2a1c says where its boot log is)\n"
	if code, got, _ := execCmd(cmd, out, errOut); code != 0 || got != want {
		t.Errorf("%d\n%q\nwant\n%q", code, got, want)
	}
}

// A box the low-memory rule saved is named under the table with when and
// why; one saved by hand is not.
func TestLsSaysSavedForLowMemory(t *testing.T) {
	at := time.Date(2026, 12, 7, 20, 53, 0, 0, time.UTC)
	list := fakeLister{
		{Meta: boxmeta.Meta{Name: "api-77aa01", Project: "/src/api", Network: config.NetworkOffline, MemoryCap: 2 << 30, CPUs: 1,
			Saved: &boxmeta.Saved{Tag: box.SuspendTag, At: at, Reason: boxmeta.SavedLowMemory}}, State: boxstate.Stopped},
		{Meta: boxmeta.Meta{Name: "web-3f2a1c", Project: "/src/web", Network: config.NetworkOffline, MemoryCap: 2 << 30, CPUs: 1,
			Saved: &boxmeta.Saved{Tag: box.SuspendTag, At: at}}, State: boxstate.Stopped},
	}
	ios, _, out, errOut := Test(false)
	cmd := NewCmdLs(&Factory{IO: ios}, func(o *LsOptions) error {
		o.Service = func() (boxLister, error) { return list, nil }
		return lsRun(o)
	})
	want := "BOX\tSTATE\tMEMORY\tCPUS\tIDLE\tSESSIONS\tNETWORK\tPORTS\tPROJECT\n" +
		"api-77aa01\tSaved\t- / 2GiB\t1\t-\t0\toffline\t-\t/src/api\n" +
		"web-3f2a1c\tSaved\t- / 2GiB\t1\t-\t0\toffline\t-\t/src/web\n" +
		"  api-77aa01: saved at " + at.Local().Format("15:04") + " because the host ran short of memory (save_when_free_below); corral up api-77aa01 resumes it\n"
	if code, got, _ := execCmd(cmd, out, errOut); code != 0 || got != want {
		t.Errorf("%d\n%q\nwant\n%q", code, got, want)
	}
}

func TestAppearedLines(t *testing.T) {
	seen := []gitwatch.Seen{{Path: "/p/a/.git"}, {Path: "/p/b/.GIT\x1b[31m"}, {Path: "/p/c/.git"}, {Path: "/p/d/.git"}, {Path: "/p/e/.git"}}
	got := strings.Join(appearedLines("web-1", seen), "\n")
	want := `! web-1: a repository entry appeared in the work tree: /p/a/.git (host git run there would use its config; remove it if you did not make it)
! web-1: a repository entry appeared in the work tree: /p/b/.GIT\x1b[31m (host git run there would use its config; remove it if you did not make it)
! web-1: a repository entry appeared in the work tree: /p/c/.git (host git run there would use its config; remove it if you did not make it)
! web-1: and 2 more (corral doctor web-1)`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if appearedLines("web-1", nil) != nil {
		t.Error("lines for nothing seen")
	}
}
