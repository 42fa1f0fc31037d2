package box

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/corral-dev/corral/core/atomicfile"
	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/broker"
	"github.com/corral-dev/corral/core/golden"
	"github.com/corral-dev/corral/core/jsonl"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/procinfo"
)

// LogRetention is how long the egress and broker logs of a deleted box are
// kept (Remove touches the egress log, so its mtime is the deletion time).
const LogRetention = 14 * 24 * time.Hour

// ProvisioningGrace is how long the metadata of a box being created is
// left alone while its instance does not exist yet.
const ProvisioningGrace = time.Hour

// GCKind says what a garbage item is.
type GCKind string

// Kinds of garbage.
const (
	GCInstance  GCKind = "instance"  // a Lima instance with no box metadata
	GCMeta      GCKind = "metadata"  // box metadata whose instance is gone
	GCBroker    GCKind = "broker"    // a broker process whose box is gone
	GCGolden    GCKind = "golden"    // a golden image no box was cloned from
	GCLog       GCKind = "log"       // an egress or broker log of a deleted box
	GCApprovals GCKind = "approvals" // the approvals of a deleted box
	GCTemp      GCKind = "temp"      // an atomic-write temp file left by a killed writer
	GCRelay     GCKind = "relay"     // a credential relay's socket or directory nothing answers on
	GCLock      GCKind = "lock"      // a lock file nobody holds, of a box or file that is gone
)

// GCItem is one thing gc removes.
type GCItem struct {
	Kind   GCKind `json:"kind"`
	Box    string `json:"box,omitempty"`
	Path   string `json:"path,omitempty"`
	PID    int    `json:"pid,omitempty"`
	Reason string `json:"reason"`
}

func (it GCItem) String() string {
	what := it.Box
	switch {
	case it.PID != 0:
		what = fmt.Sprintf("pid %d (box %s)", it.PID, it.Box)
	case it.Path != "":
		what = it.Path
	}
	return fmt.Sprintf("%s %s: %s", it.Kind, what, it.Reason)
}

// GCPlan is what gc would remove, and notes on what it did not look at.
type GCPlan struct {
	Items []GCItem `json:"items"`
	Notes []string `json:"notes,omitempty"`
}

// BrokerProc is a running `corral broker --box BOX` of this state dir.
type BrokerProc struct {
	PID int
	Box string
}

// GCFile is a file in the logs or projects directory.
type GCFile struct {
	Path    string
	ModTime time.Time
}

// GCState is everything PlanGC decides on; Service.GCState reads it.
type GCState struct {
	Now time.Time
	// MetaNames are the boxes with a metadata file, readable or not;
	// Metas the readable ones.
	MetaNames []string
	Metas     map[string]boxmeta.Meta
	// Instances are the directory names under corral's LIMA_HOME.
	Instances []string
	Brokers   []BrokerProc
	// BrokersUnknown, when set, says why brokers were not looked for.
	BrokersUnknown string
	Logs           []GCFile // in the logs directory
	Projects       []GCFile // in the projects directory
	// Temps are atomic-write temp files in corral's own state directories
	// (not in agents, seeds, snapshots or Lima's directory).
	Temps []GCFile
	// Relays are the credential relays' sockets and directories in the
	// run directory, this user's only (see gcleft.go).
	Relays []GCRelaySocket
	// Locks are the lock files of corral's state, this user's only.
	Locks []GCLockFile
	// Goldens removes unused golden images (--goldens).
	Goldens bool
}

// PlanGC decides what is garbage. It is pure: the clock is st.Now.
func PlanGC(st GCState) GCPlan {
	var p GCPlan
	hasMeta := map[string]bool{}
	for _, n := range st.MetaNames {
		hasMeta[n] = true
	}
	hasInst := map[string]bool{}
	for _, n := range st.Instances {
		hasInst[n] = true
	}
	usedGolden := map[string]bool{}
	for _, m := range st.Metas {
		if m.Golden != "" {
			usedGolden[m.Golden] = true
		}
	}

	var unusedGoldens []string
	for _, n := range sorted(st.Instances) {
		switch {
		case strings.HasPrefix(n, "_") || strings.HasPrefix(n, "."):
		case golden.Is(n):
			if !usedGolden[n] {
				unusedGoldens = append(unusedGoldens, n)
			}
		case !hasMeta[n]:
			p.Items = append(p.Items, GCItem{Kind: GCInstance, Box: n, Reason: "Lima instance without box metadata"})
		}
	}
	if len(unusedGoldens) > 0 {
		if st.Goldens {
			for _, g := range unusedGoldens {
				p.Items = append(p.Items, GCItem{Kind: GCGolden, Box: g, Reason: "no box was cloned from it"})
			}
		} else {
			p.Notes = append(p.Notes, fmt.Sprintf("%d golden image(s) no box uses: %s (corral gc --goldens removes them; the next new box rebuilds one)",
				len(unusedGoldens), strings.Join(unusedGoldens, ", ")))
		}
	}

	// live are the boxes that still exist after this plan.
	live := map[string]bool{}
	for _, n := range sorted(st.MetaNames) {
		if hasInst[n] {
			live[n] = true
			continue
		}
		if m, ok := st.Metas[n]; ok && m.Provisioning && st.Now.Sub(m.Created) < ProvisioningGrace {
			live[n] = true
			p.Notes = append(p.Notes, fmt.Sprintf("box %s is being created; its metadata is left alone", n))
			continue
		}
		p.Items = append(p.Items, GCItem{Kind: GCMeta, Box: n, Reason: "its Lima instance is gone"})
	}

	brokers := append([]BrokerProc(nil), st.Brokers...)
	sort.Slice(brokers, func(i, j int) bool { return brokers[i].PID < brokers[j].PID })
	for _, b := range brokers {
		if !live[b.Box] {
			p.Items = append(p.Items, GCItem{Kind: GCBroker, Box: b.Box, PID: b.PID, Reason: "broker of a box that is gone"})
		}
	}
	if st.BrokersUnknown != "" {
		p.Notes = append(p.Notes, st.BrokersUnknown)
	}

	for _, f := range sortedFiles(st.Logs) {
		box, ok := logBox(filepath.Base(f.Path))
		if !ok || live[box] {
			continue
		}
		if age := st.Now.Sub(f.ModTime); age > LogRetention {
			p.Items = append(p.Items, GCItem{Kind: GCLog, Box: box, Path: f.Path,
				Reason: fmt.Sprintf("log of a deleted box, untouched for %d days", int(age.Hours()/24))})
		}
	}
	for _, f := range sortedFiles(st.Projects) {
		box, ok := approvalsBox(filepath.Base(f.Path))
		if ok && !live[box] {
			p.Items = append(p.Items, GCItem{Kind: GCApprovals, Box: box, Path: f.Path, Reason: "approvals of a deleted box"})
		}
	}
	for _, r := range st.Relays {
		if age := st.Now.Sub(r.ModTime); !r.Listening && age >= LeftoverGrace {
			p.Items = append(p.Items, GCItem{Kind: GCRelay, Path: r.Path,
				Reason: fmt.Sprintf("credential relay of a corral process that ended (nothing answers on it), %s old", age.Round(time.Minute))})
		}
	}
	for _, k := range st.Locks {
		gone := !k.SubjectExists
		if k.Box != "" {
			gone = !hasMeta[k.Box] && !hasInst[k.Box]
		}
		if gone && !k.Held && st.Now.Sub(k.ModTime) >= atomicfile.OrphanAge {
			what := "a file that is gone"
			if k.Box != "" {
				what = "box " + k.Box + ", which is gone"
			}
			p.Items = append(p.Items, GCItem{Kind: GCLock, Box: k.Box, Path: k.Path, Reason: "lock of " + what + ", held by no one"})
		}
	}
	for _, f := range sortedFiles(st.Temps) {
		if age := st.Now.Sub(f.ModTime); age >= atomicfile.OrphanAge {
			p.Items = append(p.Items, GCItem{Kind: GCTemp, Path: f.Path,
				Reason: fmt.Sprintf("temp file of an interrupted write, %s old", age.Round(time.Minute))})
		}
	}
	return p
}

// logBox is the box of egress-<box>.jsonl[.N] and broker-<box>.log[.N].
func logBox(name string) (string, bool) {
	for _, pre := range []struct{ prefix, ext string }{{"egress-", ".jsonl"}, {"broker-", ".log"}} {
		rest, ok := strings.CutPrefix(name, pre.prefix)
		if !ok {
			continue
		}
		if i := strings.Index(rest, pre.ext); i > 0 {
			if tail := rest[i+len(pre.ext):]; tail == "" || isGeneration(tail) {
				return rest[:i], true
			}
		}
	}
	return "", false
}

func isGeneration(s string) bool {
	n, ok := strings.CutPrefix(s, ".")
	_, err := strconv.Atoi(n)
	return ok && err == nil
}

// approvalsBox is the box of <box>.approvals.json[.lock] (core/approval).
func approvalsBox(name string) (string, bool) {
	for _, suf := range []string{".approvals.json", ".approvals.json.lock"} {
		if box, ok := strings.CutSuffix(name, suf); ok && box != "" {
			return box, true
		}
	}
	return "", false
}

func sorted(ss []string) []string {
	out := append([]string(nil), ss...)
	sort.Strings(out)
	return out
}

func sortedFiles(fs []GCFile) []GCFile {
	out := append([]GCFile(nil), fs...)
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// GCState reads the state PlanGC decides on.
func (s *Service) GCState(goldens bool) (GCState, error) {
	st := GCState{Now: s.now(), Metas: map[string]boxmeta.Meta{}, Goldens: goldens}
	ents, err := os.ReadDir(s.Layout.BoxesDir())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return st, fmt.Errorf("listing boxes: %w", err)
	}
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), ".json"); ok && !strings.HasPrefix(n, ".") {
			st.MetaNames = append(st.MetaNames, n)
			if m, err := boxmeta.Read(s.Layout, n); err == nil {
				st.Metas[n] = m
			}
		}
	}
	ents, err = os.ReadDir(s.Layout.LimaHome())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return st, fmt.Errorf("listing lima instances: %w", err)
	}
	for _, e := range ents {
		if e.IsDir() {
			st.Instances = append(st.Instances, e.Name())
		}
	}
	if runtime.GOOS == "linux" || runtime.GOOS == "darwin" {
		st.Brokers = scanBrokers(hostProcs, s.Layout.Home)
	} else {
		st.BrokersUnknown = "brokers of deleted boxes are not looked for on this system; ps -ax | grep 'corral broker' lists brokers"
	}
	st.Logs = listFiles(s.Layout.LogsDir())
	st.Projects = listFiles(s.Layout.ProjectsDir())
	st.Relays = scanRelays(s.Layout.RunDir())
	st.Locks = s.scanLocks()
	for _, dir := range []string{s.Layout.Home, s.Layout.BoxesDir(), s.Layout.ProjectsDir(), s.Layout.LogsDir(), s.Layout.RunDir(),
		s.Layout.SSHDir(), s.Layout.CacheDir(), s.Layout.GoldensDir()} {
		for _, f := range listFiles(dir) {
			if isLeftoverTemp(filepath.Base(f.Path)) {
				st.Temps = append(st.Temps, f)
			}
		}
	}
	return st, nil
}

func listFiles(dir string) []GCFile {
	ents, _ := os.ReadDir(dir)
	var out []GCFile
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		if fi, err := e.Info(); err == nil {
			out = append(out, GCFile{Path: filepath.Join(dir, e.Name()), ModTime: fi.ModTime()})
		}
	}
	return out
}

// procTable is the process reads scanBrokers makes: core/procinfo on the
// host (/proc on Linux, kern.proc.all and kern.procargs2 on macOS).
type procTable struct {
	pids    func() ([]int, error)
	argv    func(pid int) ([]string, error)
	environ func(pid int) ([]string, error)
}

var hostProcs = procTable{pids: procinfo.PIDs, argv: procinfo.Argv, environ: procinfo.Environ}

// scanBrokers finds `corral broker --box BOX` processes of the state dir
// home: the argv parses as a broker's (broker.ParseArgv) and the
// environment has CORRAL_HOME=home (EnsureBroker sets it), so brokers of
// other state dirs are never touched. The result is in PID order.
func scanBrokers(pt procTable, home string) []BrokerProc {
	pids, _ := pt.pids()
	slices.Sort(pids)
	var out []BrokerProc
	for _, pid := range pids {
		argv, err := pt.argv(pid)
		if err != nil {
			continue
		}
		a, ok := broker.ParseArgv(argv)
		if !ok {
			continue
		}
		env, err := pt.environ(pid)
		if err != nil || !slices.Contains(env, paths.EnvHome+"="+home) {
			continue
		}
		out = append(out, BrokerProc{PID: pid, Box: a.Box})
	}
	return out
}

// PlanGC reads the state and plans.
func (s *Service) PlanGC(goldens bool) (GCPlan, error) {
	st, err := s.GCState(goldens)
	if err != nil {
		return GCPlan{}, err
	}
	return PlanGC(st), nil
}

// GC removes the items of a plan. Each per-box item is rechecked under the
// box lock (a box created since planning is left alone). It returns the
// items removed and the failures; gc is recorded in the audit log.
func (s *Service) GC(ctx context.Context, plan GCPlan) ([]GCItem, error) {
	var done []GCItem
	var errs []error
	for _, it := range plan.Items {
		if err := s.gcItem(ctx, it); err != nil {
			if !errors.Is(err, errGCSkip) {
				errs = append(errs, err)
			}
			continue
		}
		done = append(done, it)
	}
	if len(done) > 0 {
		var what []string
		for _, it := range done {
			what = append(what, it.String())
		}
		s.audit(audit.Event{Kind: audit.KindGC, Fields: map[string]any{"removed": what}})
	}
	return done, errors.Join(errs...)
}

// errGCSkip means an item is no longer garbage.
var errGCSkip = errors.New("no longer garbage")

func (s *Service) gcItem(ctx context.Context, it GCItem) error {
	switch it.Kind {
	case GCGolden:
		return s.Goldens().Remove(ctx, it.Box, false)
	case GCTemp:
		// Rechecked: a temp that is younger now is another write's.
		return removeLeftoverTemp(it.Path, s.now())
	case GCRelay:
		return removeRelay(it.Path, s.now())
	case GCLock:
		// Not under LockBox: a box's lock file is the one removed, taken
		// here through a descriptor of its own.
		return removeLock(it.Path, func() bool {
			if it.Box == "" {
				subject := strings.TrimSuffix(it.Path, atomicfile.LockSuffix)
				for _, g := range append(jsonl.Generations(subject), subject) {
					if _, err := os.Lstat(g); err == nil {
						return false
					}
				}
				return true
			}
			_, merr := boxmeta.Read(s.Layout, it.Box)
			_, ierr := os.Stat(filepath.Join(s.Layout.LimaHome(), it.Box))
			return errors.Is(merr, boxmeta.ErrNotFound) && errors.Is(ierr, fs.ErrNotExist)
		})
	}
	lock, err := s.LockBox(ctx, it.Box)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	_, merr := boxmeta.Read(s.Layout, it.Box)
	noMeta := errors.Is(merr, boxmeta.ErrNotFound)
	switch it.Kind {
	case GCInstance:
		if !noMeta {
			return errGCSkip
		}
		// A directory without lima.yaml (an interrupted limactl create) is
		// not an instance to limactl, which would leave it; it lives in
		// corral's own LIMA_HOME.
		dir := filepath.Join(s.Layout.LimaHome(), it.Box)
		if _, err := os.Stat(filepath.Join(dir, "lima.yaml")); errors.Is(err, fs.ErrNotExist) {
			return os.RemoveAll(dir)
		}
		if err := s.Lima.Delete(ctx, it.Box, true); err != nil {
			return fmt.Errorf("removing orphaned instance %s: %w", it.Box, err)
		}
		return nil
	case GCMeta:
		m, err := boxmeta.Read(s.Layout, it.Box)
		if _, serr := os.Stat(filepath.Join(s.Layout.LimaHome(), it.Box)); serr == nil {
			return errGCSkip
		}
		if err == nil {
			s.StopBroker(&m)
		}
		return boxmeta.Remove(s.Layout, it.Box)
	case GCBroker:
		// The scan identified it by argv and environment; the argv is
		// read again here, just before the signal.
		if !noMeta || !brokerAlive(it.PID, it.Box, 0) {
			return errGCSkip
		}
		if err := syscall.Kill(it.PID, syscall.SIGTERM); err != nil {
			return fmt.Errorf("stopping broker pid %d of box %s: %w", it.PID, it.Box, err)
		}
		return nil
	case GCLog, GCApprovals:
		if !noMeta {
			return errGCSkip
		}
		if err := os.Remove(it.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing %s: %w", it.Path, err)
		}
		return nil
	}
	return fmt.Errorf("unknown gc item kind %q", it.Kind)
}
