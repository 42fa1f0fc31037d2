package box

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/approval"
	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/remote"
)

// grantOp is one command of TestGrantsAllOrNothing: what it runs, the file
// it changes, and what that file holds after it when it succeeds.
type grantOp struct {
	name string
	file string
	run  func() error
	// after reports whether content is the file after the command.
	after func(content []byte) bool
}

// TestGrantsAllOrNothing: for random sequences of approve, port, allow and
// host commands with injected failures (the ports and hosts caps, a file
// size limit standing in for a full disk at any write, the audit log's
// included), after each command every file is as it was or as the
// command leaves it, never in between, and the audit log says which: a
// success has its "allow"/"host" line naming the SHA-256 of the file now
// there; a failure leaves the files as they were, and every record it made
// is followed by a refusal with the same hash (or, when the disk was too
// full to record even that, names a hash the file does not have).
func TestGrantsAllOrNothing(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("CORRAL_TEST_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (CORRAL_TEST_SEED reruns it)", seed)
	rng := rand.New(rand.NewPCG(seed, 1))

	l := paths.Layout{Home: filepath.Join(t.TempDir(), "h")}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	r, err := boxmeta.Resolve(l, boxmeta.ResolveOptions{Dir: t.TempDir(), Platform: config.Platform{OS: "linux", Arch: "amd64"}})
	if err != nil {
		t.Fatal(err)
	}
	box := r.Project.Box
	trusted, approvals, hosts := l.ProjectConfig(box), approval.Path(l, box), l.HostsFile()
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

	// A full disk: every write past limit bytes of a file fails (EFBIG;
	// SIGXFSZ ignored), the audit log's too. Process-wide, so the test
	// runs alone, and the limit is lifted after each command.
	signal.Ignore(syscall.SIGXFSZ)
	t.Cleanup(func() { signal.Reset(syscall.SIGXFSZ) })
	var unlimited syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &unlimited); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Setrlimit(syscall.RLIMIT_FSIZE, &unlimited) }) //nolint:errcheck

	nextPort := 3000
	ops := []func() grantOp{
		func() grantOp { // corral approve: hosts and ports at once
			var hostsWanted, ports []string
			for range 1 + rng.IntN(3) {
				hostsWanted = append(hostsWanted, fmt.Sprintf("h%d.example.test", rng.IntN(1000)))
			}
			for range rng.IntN(12) {
				nextPort++
				ports = append(ports, strconv.Itoa(nextPort))
			}
			g := Grant{Entries: map[string][]string{"egress": hostsWanted, "ports": ports}, Why: "requested", Who: "corral approve", Op: "approve", Done: "approved"}
			return grantOp{name: fmt.Sprintf("approve %v %v", hostsWanted, ports), file: trusted,
				run: func() error { return WriteTrusted(l, r, g, now) },
				after: func(b []byte) bool {
					for _, e := range append(hostsWanted, ports...) {
						if !bytes.Contains(b, []byte(`"`+e+`"`)) {
							return false
						}
					}
					return true
				}}
		},
		func() grantOp { // corral port
			nextPort++
			p := strconv.Itoa(nextPort)
			g := Grant{Entries: map[string][]string{"ports": {p}}, Why: "forwarded", Who: "corral port", Op: "port", Done: "added"}
			return grantOp{name: "port " + p, file: trusted,
				run:   func() error { return WriteTrusted(l, r, g, now) },
				after: func(b []byte) bool { return bytes.Contains(b, []byte(`"`+p+`"`)) }}
		},
		func() grantOp { // corral allow
			h := fmt.Sprintf("a%d.example.test", rng.IntN(1000))
			return grantOp{name: "allow " + h, file: approvals,
				run: func() error {
					_, err := approval.Allow(l, box, h, approval.ScopeAlways, audit.ActorCLI)
					return err
				},
				after: func(b []byte) bool { return bytes.Contains(b, []byte(`"`+h+`"`)) }}
		},
		func() grantOp { // corral host add (past MaxHosts: refused)
			name := fmt.Sprintf("n%d", rng.IntN(3*remote.MaxHosts))
			h, err := remote.NewHost(name, "ssh://"+name+".example.test", "", "")
			if err != nil {
				t.Fatal(err)
			}
			return grantOp{name: "host add " + name, file: hosts,
				run:   func() error { return remote.Add(l, h, true, audit.ActorCLI) },
				after: func(b []byte) bool { return bytes.Contains(b, []byte("[hosts."+name+"]")) }}
		},
		func() grantOp { // corral host rm
			name := fmt.Sprintf("n%d", rng.IntN(3*remote.MaxHosts))
			return grantOp{name: "host rm " + name, file: hosts,
				run:   func() error { return remote.Remove(l, name, audit.ActorCLI) },
				after: func(b []byte) bool { return !bytes.Contains(b, []byte("[hosts."+name+"]")) }}
		},
	}

	read := func(p string) []byte {
		b, err := os.ReadFile(p)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return b
	}
	var okN, failN, fullN int
	for i := range 300 {
		op := ops[rng.IntN(len(ops))]()
		before := map[string][]byte{trusted: read(trusted), approvals: read(approvals), hosts: read(hosts)}
		evs, _ := audit.Read(l.AuditLog(), audit.Filter{})
		full := rng.IntN(5) == 0
		if full {
			size := int64(0)
			if fi, err := os.Stat(l.AuditLog()); err == nil {
				size = fi.Size()
			}
			lim := syscall.Rlimit{Cur: uint64(size) + uint64(rng.IntN(3000)), Max: unlimited.Max}
			if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
				t.Fatal(err)
			}
		}
		err := op.run()
		if full {
			if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &unlimited); err != nil {
				t.Fatal(err)
			}
		}
		all, rerr := audit.Read(l.AuditLog(), audit.Filter{})
		if rerr != nil {
			t.Fatal(rerr)
		}
		lines := all[min(len(evs), len(all)):]
		where := fmt.Sprintf("op %d %s (full disk %v): err %v", i, op.name, full, err)
		for p, b := range before {
			if p != op.file && !bytes.Equal(read(p), b) {
				t.Fatalf("%s: %s changed", where, p)
			}
		}
		now := read(op.file)
		written := audit.Written(now)
		var grants, refusals []audit.Event
		for _, ev := range lines {
			switch ev.Kind {
			case audit.KindAllow, audit.KindHost:
				grants = append(grants, ev)
			case audit.KindRefused:
				refusals = append(refusals, ev)
			}
		}
		if err == nil {
			okN++
			if bytes.Equal(now, before[op.file]) {
				if len(grants) > 0 && grants[len(grants)-1].Fields[audit.FieldSHA256] != written {
					t.Fatalf("%s: recorded a grant, wrote nothing", where)
				}
				continue // nothing to do (every entry there already)
			}
			if !op.after(now) {
				t.Fatalf("%s: the file is neither before nor after:\n%s", where, now)
			}
			if len(grants) != 1 || grants[0].Fields[audit.FieldSHA256] != written || len(refusals) > 0 {
				t.Fatalf("%s: written, but the log says %+v", where, lines)
			}
			continue
		}
		failN++
		if full {
			fullN++
		}
		if !bytes.Equal(now, before[op.file]) {
			t.Fatalf("%s: failed but changed %s:\n%s", where, op.file, now)
		}
		for _, g := range grants {
			sha := g.Fields[audit.FieldSHA256]
			refused := false
			for _, rf := range refusals {
				refused = refused || rf.Fields[audit.FieldSHA256] == sha
			}
			if sha == written || !refused && !full {
				t.Fatalf("%s: its record %+v is not refused (log %+v)", where, g, lines)
			}
		}
		if len(refusals) == 0 && !full && !strings.Contains(err.Error(), "exists") {
			t.Fatalf("%s: refused, but no refusal recorded", where)
		}
	}
	t.Logf("%d commands succeeded, %d failed (%d with a full disk)", okN, failN, fullN)
	if failN == 0 || okN == 0 {
		t.Errorf("the sequence never failed or never succeeded: no property was tested")
	}
}

// killEnv makes TestKillHelper run grants in a loop until it is killed:
// "HOME|DIR" (the layout's home and the project).
const killEnv = "CORRAL_BOX_TEST_KILL"

// TestKillHelper is the process TestGrantsSurviveKill kills; it does
// nothing unless killEnv is set.
func TestKillHelper(t *testing.T) {
	spec := os.Getenv(killEnv)
	if spec == "" {
		t.Skip("a helper of TestGrantsSurviveKill")
	}
	home, dir, _ := strings.Cut(spec, "|")
	l := paths.Layout{Home: home}
	r, err := boxmeta.Resolve(l, boxmeta.ResolveOptions{Dir: dir, Platform: config.Platform{OS: "linux", Arch: "amd64"}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for i := 0; ; i++ {
		p := strconv.Itoa(3000 + (os.Getpid()*7+i)%20000)
		h := fmt.Sprintf("k%d-%d.example.test", os.Getpid(), i)
		_ = WriteTrusted(l, r, Grant{Entries: map[string][]string{"egress": {h}, "ports": {p}}, Why: "w", Who: "corral approve", Op: "approve", Done: "approved"}, now)
		_, _ = approval.Allow(l, r.Project.Box, h, approval.ScopeAlways, audit.ActorCLI)
		if hh, err := remote.NewHost(fmt.Sprintf("k%d", i%40), "ssh://"+h, "", ""); err == nil {
			_ = remote.Add(l, hh, true, audit.ActorCLI)
		}
	}
}

// TestGrantsSurviveKill: a command killed (SIGKILL) at any point of a
// grant leaves each file as it was or as one whole grant left it, and a
// file that changed has the record of exactly its content in the audit
// log (its "allow"/"host" line's SHA-256).
func TestGrantsSurviveKill(t *testing.T) {
	if testing.Short() {
		t.Skip("kills processes")
	}
	l := paths.Layout{Home: filepath.Join(t.TempDir(), "h")}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	r, err := boxmeta.Resolve(l, boxmeta.ResolveOptions{Dir: dir, Platform: config.Platform{OS: "linux", Arch: "amd64"}})
	if err != nil {
		t.Fatal(err)
	}
	box := r.Project.Box
	files := []string{l.ProjectConfig(box), approval.Path(l, box), l.HostsFile()}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	for i := range 25 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKillHelper$")
		cmd.Env = append(os.Environ(), killEnv+"="+l.Home+"|"+dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(50+rng.IntN(400)) * time.Millisecond)
		cmd.Process.Kill() //nolint:errcheck
		cmd.Wait()         //nolint:errcheck
		evs, err := audit.Read(l.AuditLog(), audit.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		recorded := map[any]bool{}
		for _, ev := range evs {
			if ev.Kind == audit.KindAllow || ev.Kind == audit.KindHost {
				recorded[ev.Fields[audit.FieldSHA256]] = true
			}
		}
		for _, p := range files {
			b, err := os.ReadFile(p)
			if os.IsNotExist(err) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if !recorded[audit.Written(b)] {
				t.Fatalf("kill %d: %s holds content no audit line records:\n%s", i, p, b)
			}
		}
		if _, err := config.LoadFile(config.KindTrusted, files[0]); err != nil {
			t.Fatalf("kill %d: trusted layer: %v", i, err)
		}
		s, err := approval.Open(l, box)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.All(); err != nil {
			t.Fatalf("kill %d: approvals: %v", i, err)
		}
		if _, err := remote.Load(files[2]); err != nil {
			t.Fatalf("kill %d: hosts: %v", i, err)
		}
		if i == 24 {
			t.Logf("%d grants recorded in all", len(recorded))
			if len(recorded) < 10 {
				t.Errorf("only %d grants: the helper did not get far enough to test anything", len(recorded))
			}
		}
	}
}
