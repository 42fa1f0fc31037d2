package box

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/corral-dev/corral/core/agentstate"
	"github.com/corral-dev/corral/core/approval"
	"github.com/corral-dev/corral/core/atomicfile"
	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/boxstate"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/gitshadow"
	"github.com/corral-dev/corral/core/gitwatch"
	"github.com/corral-dev/corral/core/golden"
	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/hostinfo"
	"github.com/corral-dev/corral/core/lima"
	"github.com/corral-dev/corral/core/limayaml"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/pins"
	"github.com/corral-dev/corral/core/qemu"
	"github.com/corral-dev/corral/core/recent"
)

// UpOptions tune Up.
type UpOptions struct {
	NoGolden bool
	// Force starts the box even when the memory caps of running boxes
	// would exceed the host's RAM.
	Force bool
	// Learn starts a new learning window (`corral up --learn`; see
	// approval.Learning) once the box runs.
	Learn bool
}

// checkBudget warns above 75 % of host RAM and refuses above 100 %.
func (s *Service) checkBudget(box string, newCap uint64, force bool) error {
	host, err := hostinfo.Read()
	if err != nil {
		return nil
	}
	list, _ := s.List()
	var others []Status
	for _, st := range list {
		if st.Name != box {
			others = append(others, st)
		}
	}
	var idle []string
	if ib, err := s.IdleBoxes(); err == nil {
		for _, st := range ib {
			idle = append(idle, st.Name)
		}
	}
	b := CheckBudget(others, newCap, host.MemoryBytes, idle)
	switch {
	case b.Level == BudgetRefuse && !force:
		return hint.New(fmt.Errorf("not starting box %s: %s", box, b), "stop a box first, or pass --force")
	case b.Level >= BudgetWarn:
		s.progress("warning: %s", b)
	}
	return nil
}

// Up creates the box of a resolved project if needed, and starts it and
// its broker. It is safe to call on a running box. A box that learns
// (opt.Learn, or network = "learn" for the first time) starts its
// learning window once it runs, so a long first build does not use it up.
func (s *Service) Up(ctx context.Context, r boxmeta.Resolved, opt UpOptions) (boxmeta.Meta, error) {
	learn, err := learnsNow(s.Layout, r, opt)
	if err != nil {
		return boxmeta.Meta{}, err
	}
	m, err := s.up(ctx, r, opt)
	if err != nil || !learn {
		return m, err
	}
	lr, err := approval.StartLearning(s.Layout, r.Project.Box, r.Loaded.Settings().LearnFor, s.now(), s.Actor)
	if err != nil {
		return m, err
	}
	s.progress("box %s learns until %s: its broker also allows public hosts off the allow-list and logs them; corral egress learn %s proposes an allow-list",
		m.Name, lr.Until.Local().Format("15:04"), m.Name)
	return m, nil
}

// learnsNow says whether Up starts a learning window: always with
// opt.Learn, and for network = "learn" only when the box never learned (a
// window that ended stays ended). Learning needs broker mode and is
// refused by the strict profile.
func learnsNow(l paths.Layout, r boxmeta.Resolved, opt UpOptions) (bool, error) {
	c := r.Loaded.Settings()
	if !opt.Learn && !c.Learns() {
		return false, nil
	}
	box := r.Project.Box
	switch {
	case c.Profile == config.ProfileStrict:
		return false, hint.New(fmt.Errorf("box %s: the strict profile refuses learning (the broker would allow any public host)", box), `use profile = "default" for this box, or allow hosts with corral allow`)
	case c.NetworkMode() != config.NetworkBroker:
		return false, hint.New(fmt.Errorf("box %s: learning needs network = \"broker\" (this box is %q)", box, c.NetworkMode()),
			fmt.Sprintf("set network = \"broker\" in ~/.corral/projects/%s.toml", box))
	case opt.Learn:
		return true, nil
	}
	lr, err := approval.ReadLearning(l, box)
	return err == nil && lr.Started.IsZero(), err
}

func (s *Service) up(ctx context.Context, r boxmeta.Resolved, opt UpOptions) (boxmeta.Meta, error) {
	box := r.Project.Box
	lock, err := s.LockBox(ctx, box)
	if err != nil {
		return boxmeta.Meta{}, err
	}
	defer lock.Unlock()
	// The menu's Projects offers the folder again, also after the box
	// is removed.
	if err := recent.Record(s.Layout, r.Project.Dir, s.now()); err != nil {
		s.Logger.Warn("recording the recent project", "err", err)
	}

	m, err := boxmeta.Read(s.Layout, box)
	exists := err == nil
	if err != nil && !errors.Is(err, boxmeta.ErrNotFound) {
		return boxmeta.Meta{}, err
	}
	// Fast path for a session on a running box: no limactl process at all
	// (each costs tens of milliseconds of CPU); Lima's own pid files say it
	// runs.
	if exists && m.Project == r.Project.Dir {
		if st, err := lima.ReadInstanceDir(s.Layout.LimaHome(), box); err == nil && m.StateOf(boxstate.FromLima(st.Status)).Up() {
			return s.upRunning(ctx, r, m) // Running, or Failed (which it refuses)
		}
	}
	if _, err := s.Lima.CheckVersion(ctx); err != nil {
		return boxmeta.Meta{}, err
	}
	inst, ierr := s.Lima.Get(ctx, box)
	if ierr != nil && !errors.Is(ierr, lima.ErrNotFound) {
		return boxmeta.Meta{}, fmt.Errorf("looking up box %s: %w", box, ierr)
	}
	haveInst := ierr == nil

	// A create interrupted by ctrl-C or a crash leaves Provisioning set:
	// remove what it made and start over.
	if exists && m.Provisioning {
		s.progress("box %s was left half-created; cleaning up and creating it again", box)
		if haveInst {
			if err := s.Lima.Delete(ctx, box, true); err != nil {
				return boxmeta.Meta{}, fmt.Errorf("cleaning up half-created box %s: %w", box, err)
			}
		}
		haveInst, exists = false, false
	}
	if haveInst && !exists {
		return boxmeta.Meta{}, hint.New(fmt.Errorf("a Lima instance named %s exists but corral has no record of it", box), fmt.Sprintf("corral rm -f %s removes it", box))
	}
	if err := checkGitShadow(r); err != nil {
		return boxmeta.Meta{}, err
	}
	if !haveInst {
		return s.create(ctx, r, opt)
	}
	if m.Project != r.Project.Dir {
		return boxmeta.Meta{}, hint.New(fmt.Errorf("box %s belongs to %s, not %s", box, m.Project, r.Project.Dir), fmt.Sprintf("use another name, or corral rm %s", box))
	}
	if m.StateOf(boxstate.FromLima(inst.Status)).Up() {
		return s.upRunning(ctx, r, m)
	}
	s.followConfig(r, &m)
	// Lima reads its port forwards when it starts the box: the config's
	// apply now, without a rebuild.
	if err := s.applyPorts(r, &m); err != nil {
		return m, err
	}
	// The qemu wrapper reads the metadata when Lima starts qemu: it must
	// already hold the followed settings (the git shadow opt-out).
	if err := boxmeta.Write(s.Layout, m); err != nil {
		return m, err
	}
	rendered, rerr := Render(s.Layout, r, m.BrokerPort, false)
	s.warnDrift(rendered, rerr, m)
	if err := s.EnsureBroker(ctx, &m); err != nil {
		return m, err
	}
	if err := boxmeta.Write(s.Layout, m); err != nil { // the broker's pid, before a start that may fail
		return m, err
	}
	if err := s.checkBudget(box, m.MemoryCap, opt.Force); err != nil {
		return m, err
	}
	s.autoSnapshot(ctx, r, m)
	if err := s.ensureSeedDir(r); err != nil {
		return m, err
	}
	s.progress("starting box %s", box)
	// What a previous run found was reported then.
	_ = gitwatch.Clear(s.Layout, box)
	// startBox resumes a saved box (suspend.go).
	if err := s.booting(ctx, "starting box "+box, box, func() error { return s.startBox(ctx, &m) }); err != nil {
		return m, fmt.Errorf("starting box %s: %w", box, err)
	}
	s.audit(audit.Event{Kind: audit.KindStart, Box: box})
	m.ProvisionError = ""
	if rerr == nil {
		if err := s.provisionFailure(box, string(m.VMType), rendered); err != nil {
			m.ProvisionError = err.Error()
			_ = boxmeta.Write(s.Layout, m)
			return m, err
		}
	}
	m.LastActivity = s.now()
	return m, boxmeta.Write(s.Layout, m)
}

// upRunning is Up for a box that already runs: follow the config, warn
// about drift, make sure the broker answers, and refuse a box whose last
// provisioning failed.
func (s *Service) upRunning(ctx context.Context, r boxmeta.Resolved, m boxmeta.Meta) (boxmeta.Meta, error) {
	if m.ProvisionError != "" {
		return m, hint.New(fmt.Errorf("box %s: %s", m.Name, m.ProvisionError),
			provisionHint(lima.ConsoleLog(s.Layout.LimaHome(), m.Name, string(m.VMType))))
	}
	before := m
	s.followConfig(r, &m)
	if hash, err := s.templateHash(r, m.BrokerPort); err == nil {
		s.warnDrift(limayaml.Rendered{Hash: hash}, nil, m)
	}
	if err := s.EnsureBroker(ctx, &m); err != nil {
		return m, err
	}
	// Metadata is written (atomically, with fsyncs) only when it changed:
	// a session records itself in run/sessions instead.
	if reflect.DeepEqual(m, before) {
		return m, nil
	}
	m.LastActivity = s.now()
	return m, boxmeta.Write(s.Layout, m)
}

// checkGitShadow refuses to start the box of a git project on Linux qemu
// where qemu cannot be given the git directory read-only: the wrapper
// would refuse too, with the reason only in Lima's ha.stderr.log.
func checkGitShadow(r boxmeta.Resolved) error {
	c := r.Loaded.Settings()
	if runtime.GOOS != "linux" || c.VMType != config.VMTypeQEMU || !c.GitShadow {
		return nil
	}
	d, err := gitshadow.Find(r.Project.Dir)
	if err != nil {
		return fmt.Errorf("box %s: %w", r.Project.Box, err)
	}
	if !d.IsRepo() {
		return nil
	}
	if err := qemu.CheckNamespaces(); err != nil {
		return hint.New(fmt.Errorf("box %s: cannot keep the box from writing the host's git directory: %w", r.Project.Box, err), fmt.Sprintf("corral doctor says what is missing; git_shadow = false in the box's trusted layer (~/.corral/projects/%s.toml) lets the box write .git (the host guard then reverts changes to what git executes)", r.Project.Box))
	}
	return nil
}

// followConfig applies the settings that need no rebuild.
func (s *Service) followConfig(r boxmeta.Resolved, m *boxmeta.Meta) {
	c := r.Loaded.Settings()
	m.IdleStop, m.StopOnExit = c.IdleStop.String(), c.StopOnExit
	m.IdleAction = c.IdleAction
	// The host side of the git shadow follows at the next start (the qemu
	// wrapper reads it); the guest's overlay follows the template.
	m.GitShadowOff = !c.GitShadow
	m.MountType = c.MountType
}

func (s *Service) warnDrift(rendered limayaml.Rendered, err error, m boxmeta.Meta) {
	if err == nil && rendered.Hash != m.TemplateHash {
		s.progress("warning: the config of box %s changed since it was created; run `corral rebuild` to apply it", m.Name)
	}
}

func (s *Service) create(ctx context.Context, r boxmeta.Resolved, opt UpOptions) (boxmeta.Meta, error) {
	box := r.Project.Box
	c := r.Loaded.Settings()
	port := s.pickBrokerPort(box)
	rendered, err := Render(s.Layout, r, port, false)
	if err != nil {
		return boxmeta.Meta{}, err
	}
	mem, _ := config.ParseSize(c.Memory)
	m := boxmeta.Meta{
		Name: box, Project: r.Project.Dir, Created: s.now(), TemplateHash: rendered.Hash,
		BrokerPort: port, Network: c.NetworkMode(), MemoryCap: mem, CPUs: c.CPUs, VMType: c.VMType,
		IdleStop: c.IdleStop.String(), IdleAction: c.IdleAction, StopOnExit: c.StopOnExit, LastActivity: s.now(),
		AgentState: c.AgentState, Source: c.Source,
		GitShadowOff: !c.GitShadow, MountType: c.MountType, Provisioning: true,
		HostPorts: c.BridgedPorts(), Hide: slices.Clone(c.Hide),
	}
	if err := s.checkBudget(box, mem, opt.Force); err != nil {
		return boxmeta.Meta{}, err
	}
	if c.AgentState == agentstate.Shared {
		if err := os.MkdirAll(s.Layout.AgentDir(c.Agent), 0o700); err != nil {
			return boxmeta.Meta{}, err
		}
		s.warnSharedAgentState(r)
	}
	// Metadata first, marked as provisioning: an interrupted create is
	// then recognised and cleaned up by the next up.
	if err := boxmeta.Write(s.Layout, m); err != nil {
		return boxmeta.Meta{}, err
	}
	if err := s.prepareSeed(ctx, r); err != nil {
		return m, err
	}
	// The rendered template carries the ports key's forwards.
	m.Ports = c.Ports()
	golden := c.Golden && !opt.NoGolden
	if golden {
		g, err := s.EnsureGolden(ctx, r)
		if err != nil {
			return m, err
		}
		s.progress("creating box %s from %s", box, g)
		if err := s.Lima.Clone(ctx, g, box); err != nil {
			return m, fmt.Errorf("cloning %s into box %s: %w", g, box, err)
		}
		// The clone carries the golden's template; the box gets its own.
		if err := atomicfile.WriteFile(filepath.Join(s.Layout.LimaHome(), box, "lima.yaml"), rendered.YAML, 0o644); err != nil {
			return m, err
		}
		m.Golden = g
	} else {
		if !c.Golden {
			// The box builds its own setup: its template shares the npm cache.
			if err := s.fetchNPM(ctx, r); err != nil {
				return m, err
			}
		}
		s.progress("creating box %s", box)
		tmpl, err := s.writeTemplate(box, rendered.YAML)
		if err != nil {
			return m, err
		}
		defer os.Remove(tmpl)
		if err := s.Lima.Create(ctx, box, tmpl); err != nil {
			return m, fmt.Errorf("creating box %s: %w", box, err)
		}
	}
	s.audit(audit.Event{Kind: audit.KindCreate, Box: box, Fields: map[string]any{"project": r.Project.Dir, "golden": m.Golden, "template_hash": m.TemplateHash}})
	// The broker reads the metadata when it starts: it must already name
	// the golden, whose toolchains group the broker allows and follows.
	if err := boxmeta.Write(s.Layout, m); err != nil {
		return m, err
	}
	if err := s.EnsureBroker(ctx, &m); err != nil {
		return m, err
	}
	// Record the broker's pid before the (long, fallible) start: a failed
	// start must leave a box that corral rm or stop can clean up, broker
	// included.
	if err := boxmeta.Write(s.Layout, m); err != nil {
		return m, err
	}
	s.progress("starting box %s (provisioning)", box)
	// What a previous run found was reported then.
	_ = gitwatch.Clear(s.Layout, box)
	if err := s.booting(ctx, "starting box "+box, box, func() error { return s.Lima.Start(ctx, box, StartTimeout) }); err != nil {
		return m, hint.New(fmt.Errorf("starting box %s: %w", box, err), fmt.Sprintf("the provisioning log is in the box's console log: %s", lima.ConsoleLog(s.Layout.LimaHome(), box, string(m.VMType))))
	}
	s.audit(audit.Event{Kind: audit.KindStart, Box: box})
	if err := s.provisionFailure(box, string(m.VMType), rendered); err != nil {
		s.audit(audit.Event{Kind: audit.KindStart, Box: box, Fields: map[string]any{"provision_error": err.Error()}})
		return m, err
	}
	// The first boot copied the seed (provision/30-agent.sh, 45-clone.sh).
	if err := s.clearSeed(r); err != nil {
		return m, err
	}
	m.Provisioning = false
	m.LastActivity = s.now()
	return m, boxmeta.Write(s.Layout, m)
}

func (s *Service) writeTemplate(name string, yaml []byte) (string, error) {
	p := filepath.Join(s.Layout.RunDir(), name+".yaml")
	return p, atomicfile.WriteFile(p, yaml, 0o600)
}

// goldenTemplate renders the golden variant of r (golden.Variant): the
// box's template without the project, for the golden image's name.
func goldenTemplate(s *Service, r boxmeta.Resolved) ([]byte, error) {
	g, err := golden.Variant(r)
	if err != nil {
		return nil, err
	}
	rendered, err := Render(s.Layout, g, 0, true)
	return rendered.YAML, err
}

// EnsureGolden builds the golden image a box needs, once per distinct
// project-independent template (golden.Images.Build), after putting the
// agent's pinned npm tarballs in the host's cache.
func (s *Service) EnsureGolden(ctx context.Context, r boxmeta.Resolved) (string, error) {
	if err := s.fetchNPM(ctx, r); err != nil {
		return "", err
	}
	yaml, err := goldenTemplate(s, r)
	if err != nil {
		return "", err
	}
	return s.Goldens().Build(ctx, yaml)
}

// Stop stops a box and its broker.
func (s *Service) Stop(ctx context.Context, box string, kind audit.Kind) error {
	lock, err := s.LockBox(ctx, box)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	m, err := boxmeta.Read(s.Layout, box)
	if err != nil {
		return err
	}
	s.CloseMaster(ctx, box)
	st, _ := lima.ReadInstanceDir(s.Layout.LimaHome(), box)
	switch next, _ := m.LockedStateOf(boxstate.FromLima(st.Status)).Next(boxstate.Stop); next {
	case boxstate.Stopping: // its VM runs, or Lima's processes disagree
		s.progress("stopping box %s", box)
		if err := s.Lima.Stop(ctx, box, false); err != nil {
			return fmt.Errorf("stopping box %s: %w", box, err)
		}
	case boxstate.Stopped:
		// Stopping a saved box means: the next start boots.
		s.progress("discarding the saved state of box %s", box)
		if err := s.dropSaved(ctx, &m); err != nil {
			return err
		}
	}
	s.StopBroker(&m)
	// The box can no longer write the project: a last check, then the
	// fingerprint is forgotten (the next session records a new one).
	s.guardGit(m, true)
	s.reportNested(m, "stop")
	// Approvals "for this session" end with the box's run.
	if err := approval.ClearSession(s.Layout, box); err != nil {
		s.Logger.Warn("clearing session approvals", "box", box, "err", err)
	}
	if kind == "" {
		kind = audit.KindStop
	}
	s.audit(audit.Event{Kind: kind, Box: box})
	return boxmeta.Write(s.Layout, m)
}

// Start starts an existing box (and its broker).
func (s *Service) Start(ctx context.Context, box string) error {
	m, err := boxmeta.Read(s.Layout, box)
	if err != nil {
		return err
	}
	r, err := boxmeta.Resolve(s.Layout, boxmeta.ResolveOptions{Dir: m.Project})
	if err != nil {
		return err
	}
	_, err = s.Up(ctx, r, UpOptions{})
	return err
}

// Remove deletes a box: its instance, broker and metadata. force also
// removes a running box.
func (s *Service) Remove(ctx context.Context, box string, force bool) error {
	lock, err := s.LockBox(ctx, box)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	m, merr := boxmeta.Read(s.Layout, box)
	st, serr := lima.ReadInstanceDir(s.Layout.LimaHome(), box)
	if serr == nil && !m.LockedStateOf(boxstate.FromLima(st.Status)).Can(boxstate.Remove) && !force {
		return hint.New(fmt.Errorf("box %s is %s", box, strings.ToLower(string(st.Status))), fmt.Sprintf("corral stop %s first, or corral rm -f %s", box, box))
	}
	s.CloseMaster(ctx, box)
	if err := s.Lima.Delete(ctx, box, true); err != nil && !errors.Is(err, lima.ErrNotFound) {
		return fmt.Errorf("removing box %s: %w", box, err)
	}
	if merr == nil {
		s.StopBroker(&m)
	} else if !errors.Is(merr, boxmeta.ErrNotFound) {
		s.Logger.Warn("unreadable metadata removed", "box", box, "err", merr)
	}
	s.forgetRuntime(box)
	if err := boxmeta.Remove(s.Layout, box); err != nil {
		return err
	}
	_ = os.RemoveAll(s.Layout.SeedDir(box))
	_ = os.RemoveAll(s.Layout.GitlinksDir(box))
	// The egress log outlives the box for 14 days (corral gc removes it).
	_ = os.Chtimes(s.Layout.EgressLog(box), time.Now(), time.Now())
	s.audit(audit.Event{Kind: audit.KindRm, Box: box})
	return nil
}

// Rebuild recreates a box from its current config, keeping the project's
// trusted config and approvals (they live outside the instance).
func (s *Service) Rebuild(ctx context.Context, r boxmeta.Resolved, opt UpOptions) (boxmeta.Meta, error) {
	box := r.Project.Box
	// Lima must work before anything is removed: a rebuild that removes the
	// box and then cannot create one leaves the user with nothing.
	if _, err := s.Lima.CheckVersion(ctx); err != nil {
		return boxmeta.Meta{}, fmt.Errorf("rebuilding box %s: %w", box, err)
	}
	if _, err := boxmeta.Read(s.Layout, box); err == nil {
		if err := s.Remove(ctx, box, true); err != nil {
			return boxmeta.Meta{}, err
		}
	}
	m, err := s.Up(ctx, r, opt)
	if err == nil {
		s.audit(audit.Event{Kind: audit.KindRebuild, Box: box})
	}
	return m, err
}

// fetchNPM puts the pinned npm tarballs of the box's agent into the
// host's npm cache (each verified against its pin) before a golden build
// installs from them (core/agent NPM; Claude Code only with
// claude_install = "npm"). The npm client's own registry setting decides
// where they come from; the pin decides what is accepted.
func (s *Service) fetchNPM(ctx context.Context, r boxmeta.Resolved) error {
	a, pinned, err := limayaml.AgentPins(r.Loaded.Settings(), r.Platform.Arch)
	if err != nil {
		return err
	}
	for _, pin := range pinned {
		if _, err := (pins.Fetcher{Dir: s.Layout.NPMCacheDir()}).Fetch(ctx, pin); err != nil {
			fix := "install the npm client"
			if a.Name == "claude" {
				fix += `, or set claude_install = "official"`
			}
			return hint.New(fmt.Errorf("agent %s: %w", a.Name, err), fix)
		}
	}
	return nil
}
