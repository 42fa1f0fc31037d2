package config_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/config/granttest"
	"github.com/corral-dev/corral/core/egress"
)

// TestCheckGrantCorpus: every corpus entry gets its decision, with a
// sentence whenever it is not ok; and AddToList (the one writer) writes
// exactly the entries the check does not refuse.
func TestCheckGrantCorpus(t *testing.T) {
	for _, c := range granttest.All() {
		v := config.CheckGrant(c.Key, c.Entry, config.GrantContext{})
		if v.Risk != c.Want {
			t.Errorf("%s %q: %s (%s), want %s", c.Key, c.Entry, v.Risk, v.Why, c.Want)
		}
		if (v.Risk != config.RiskOK) != (v.Why != "") {
			t.Errorf("%s %q: risk %s with why %q", c.Key, c.Entry, v.Risk, v.Why)
		}
		path := filepath.Join(t.TempDir(), "b.toml")
		err := config.AddToList(path, c.Key, []string{c.Entry}, "test", "test", time.Now())
		if (err != nil) != (c.Want == config.RiskRefused) {
			t.Errorf("AddToList %s %q: %v, want refused=%v", c.Key, c.Entry, err, c.Want == config.RiskRefused)
		}
		if _, serr := os.Stat(path); (serr == nil) == (c.Want == config.RiskRefused) {
			t.Errorf("AddToList %s %q: file written=%v", c.Key, c.Entry, serr == nil)
		}
	}
	if v := config.CheckGrant("ports", "22:22", config.GrantContext{LowHostPorts: true}); v.Risk != config.RiskOK {
		t.Errorf("22:22 with low_host_ports: %+v", v)
	}
	for _, tc := range config.Toolchains {
		if v := config.CheckGrant("toolchains", tc, config.GrantContext{}); v.Risk != config.RiskFlagged || v.Why == "" {
			t.Errorf("toolchain %s: %+v", tc, v)
		}
	}
	if v := config.CheckGrant("toolchains", "cobol", config.GrantContext{}); v.Risk != config.RiskRefused {
		t.Errorf("unknown toolchain: %+v", v)
	}
}

// TestEgressGroupsPassTheGrantCheck: the named groups corral ships are
// grants too.
func TestEgressGroupsPassTheGrantCheck(t *testing.T) {
	for _, name := range egress.GroupNames() {
		g, ok := egress.LookupGroup(name)
		if !ok {
			continue
		}
		for _, e := range g.Entries {
			if v := config.CheckGrant("egress", e, config.GrantContext{}); v.Risk == config.RiskRefused {
				t.Errorf("group %s: %s refused: %s", name, e, v.Why)
			}
		}
	}
}

// randomEntry builds an entry from pieces that hit the check's edges.
func randomEntry(r *rand.Rand) string {
	hosts := []string{"com", "co.uk", "github.io", "example.com", "a.example.co.uk", "corp", "x_y.example.com", "EXAMPLE.com.", "bücher.example"}
	nets := []string{"0.0.0.0", "10.0.0.0", "127.0.0.1", "169.254.169.254", "8.8.8.8", "192.168.1.0", "::", "::1", "::ffff:169.254.169.254", "::ffff:0:0", "fd00:ec2::254", "2002:a9fe:a9fe::", "64:ff9b::a9fe:a9fe", "2a00:1450::", "fe80::"}
	switch r.IntN(3) {
	case 0:
		n := nets[r.IntN(len(nets))]
		max := 32
		if strings.Contains(n, ":") {
			max = 128
		}
		return fmt.Sprintf("%s/%d", n, r.IntN(max+1))
	default:
		s := hosts[r.IntN(len(hosts))]
		if r.IntN(2) == 0 {
			s = "*." + s
		}
		switch r.IntN(4) {
		case 0:
			s += ":*"
		case 1:
			s += fmt.Sprintf(":%d", r.IntN(70000))
		}
		return s
	}
}

// TestGrantCheckProperties: for any entry, the verdict is the verdict of
// its canonical form (no path can get another answer by writing it
// differently), a canonical form parses back to itself, and AddToList
// writes exactly when the check does not refuse.
func TestGrantCheckProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	dir := t.TempDir()
	for i := range 3000 {
		e := randomEntry(r)
		v := config.CheckGrant("egress", e, config.GrantContext{})
		canon, err := egress.CanonicalEntry(e)
		if err != nil {
			if v.Risk != config.RiskRefused {
				t.Fatalf("%q: does not parse (%v) but %s", e, err, v.Risk)
			}
			continue
		}
		if canon != v.Entry {
			t.Fatalf("%q: verdict entry %q, canonical %q", e, v.Entry, canon)
		}
		if again := config.CheckGrant("egress", canon, config.GrantContext{}); again != v {
			t.Fatalf("%q: %+v, its canonical form %q: %+v", e, v, canon, again)
		}
		if c2, err := egress.CanonicalEntry(canon); err != nil || c2 != canon {
			t.Fatalf("%q: canonical %q parses to %q, %v", e, canon, c2, err)
		}
		if i%10 == 0 {
			path := filepath.Join(dir, fmt.Sprintf("b%d.toml", i))
			err := config.AddToList(path, "egress", []string{e}, "t", "t", time.Now())
			if (err != nil) != (v.Risk == config.RiskRefused) {
				t.Fatalf("%q: AddToList %v, verdict %s", e, err, v.Risk)
			}
		}
	}
}

// TestAddToListConcurrent: N writers adding one port each to the same
// trusted layer at once lose none: the read-modify-write is under the
// file's lock.
func TestAddToListConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "b.toml")
	if err := os.WriteFile(path, []byte("# mine\ncpus = 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const n = 24
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for i := range n {
		wg.Add(2)
		go func() {
			defer wg.Done()
			errs <- config.AddToList(path, "ports", []string{fmt.Sprint(3000 + i)}, "t", "corral port", time.Now())
		}()
		go func() {
			defer wg.Done()
			errs <- config.AddToList(path, "egress", []string{fmt.Sprintf("h%d.example.com", i)}, "t", "corral approve", time.Now())
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	l, err := config.LoadFile(config.KindTrusted, path)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Config.PortEntries) != n || len(l.Config.Egress) != n {
		t.Fatalf("lost updates: %d ports, %d egress entries, want %d each", len(l.Config.PortEntries), len(l.Config.Egress), n)
	}
	for i := range n {
		if !slices.Contains(l.Config.PortEntries, fmt.Sprint(3000+i)) || !slices.Contains(l.Config.Egress, fmt.Sprintf("h%d.example.com", i)) {
			t.Fatalf("entry %d lost", i)
		}
	}
	if *l.Config.CPUs != 2 {
		t.Fatal("the rest of the file changed")
	}
}

// FuzzCheckGrant: for any entry the check never panics, an entry that
// parses validates in its canonical form (CheckEgressEntry), and the
// verdict of an entry is the verdict of its canonical form.
func FuzzCheckGrant(f *testing.F) {
	for _, c := range granttest.Egress {
		f.Add(c.Entry)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v := config.CheckGrant("egress", s, config.GrantContext{})
		canon, err := egress.CanonicalEntry(s)
		if err != nil {
			if v.Risk != config.RiskRefused {
				t.Fatalf("%q does not parse but is %s", s, v.Risk)
			}
			return
		}
		if err := config.CheckEgressEntry(canon); err != nil {
			t.Fatalf("%q: canonical %q does not validate: %v", s, canon, err)
		}
		if again := config.CheckGrant("egress", canon, config.GrantContext{}); again != v {
			t.Fatalf("%q: %+v; canonical %q: %+v", s, v, canon, again)
		}
	})
}
