package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A repository's egress_groups is a request, pending until a host layer
// names the group; approving it (ApproveGroups) grants it; an unknown
// group is a violation naming the file and the value.
func TestEgressGroupsRequested(t *testing.T) {
	global, _ := filepath.Abs("testdata/global.toml")
	proj := newProject(t, []byte("egress_groups = [\"code-hosts\"]\n"))
	req := request(proj, global)
	req.TrustedPath = filepath.Join(t.TempDir(), "box.toml")
	res, err := Load(req)
	if err != nil {
		t.Fatalf("a requested group is not a violation: %v", err)
	}
	p := res.Pending()
	if len(p) != 1 || p[0].Key != "egress_groups" || p[0].Entry != "code-hosts" || p[0].Line != 1 {
		t.Fatalf("pending = %+v", p)
	}
	if res.Config.EgressGroups != nil {
		t.Errorf("a request reached the merge: %v", res.Config.EgressGroups)
	}
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	must(t, ApproveGroups(req.TrustedPath, []string{"code-hosts"}, p[0].File, res.ProjectHash, now))
	b, _ := os.ReadFile(req.TrustedPath)
	if want := "# corral approve 2026-12-01: requested by " + p[0].File + " (" + res.ProjectHash + ")\negress_groups = [\"code-hosts\"]\n"; string(b) != want {
		t.Errorf("trusted file:\n%s\nwant:\n%s", b, want)
	}
	res, err = Load(req)
	if err != nil || len(res.Pending()) != 0 || len(res.Config.EgressGroups) != 1 {
		t.Errorf("after approving: pending %v, groups %v, %v", res.Pending(), res.Config.EgressGroups, err)
	}

	proj = newProject(t, []byte("egress_groups = [\"everything\"]\n"))
	_, err = Load(request(proj, global))
	if !errors.Is(err, ErrViolation) || !strings.Contains(err.Error(), `.corral.toml:1: egress_groups = "everything": unknown egress group`) {
		t.Errorf("unknown group: %v", err)
	}
	if err := ApproveGroups(req.TrustedPath, []string{"everything"}, "f", "h", now); err == nil {
		t.Error("an unknown group was written")
	}
}

func TestLearnNetwork(t *testing.T) {
	global, _ := filepath.Abs("testdata/global.toml")
	for _, tc := range []struct {
		name, trusted string
		mode          Network
		learns        bool
		learnFor      time.Duration
	}{
		{"broker by default", "", NetworkBroker, false, DefaultLearnFor},
		{"learn runs in broker mode", "network = \"learn\"\n", NetworkBroker, true, DefaultLearnFor},
		{"learn_for", "network = \"learn\"\nlearn_for = \"2h\"\n", NetworkBroker, true, 2 * time.Hour},
		{"strict turns learn into broker", "network = \"learn\"\nprofile = \"strict\"\n", NetworkBroker, false, DefaultLearnFor},
		{"full", "network = \"full\"\n", NetworkFull, false, DefaultLearnFor},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := request("", global)
			req.TrustedPath = filepath.Join(t.TempDir(), "box.toml")
			must(t, os.WriteFile(req.TrustedPath, []byte(tc.trusted), 0o600))
			res, err := Load(req)
			if err != nil {
				t.Fatal(err)
			}
			c := res.Settings()
			if c.NetworkMode() != tc.mode || c.Learns() != tc.learns || c.LearnFor != tc.learnFor {
				t.Errorf("mode %q learns %v for %v", c.NetworkMode(), c.Learns(), c.LearnFor)
			}
		})
	}
	// A repository may not loosen broker to learn, nor set learn_for.
	for _, data := range []string{"network = \"learn\"\n", "learn_for = \"1h\"\n"} {
		proj := newProject(t, []byte(data))
		if _, err := Load(request(proj, global)); !errors.Is(err, ErrViolation) {
			t.Errorf("repository %q: %v", data, err)
		}
	}
	for _, v := range []string{`"30s"`, `"25h"`} {
		l, _ := Parse(KindGlobal, "g.toml", []byte("learn_for = "+v+"\n"))
		if errs := validate(l); len(errs) != 1 || !strings.Contains(errs[0].Error(), "learn_for") {
			t.Errorf("learn_for = %s: %v", v, errs)
		}
	}
}
