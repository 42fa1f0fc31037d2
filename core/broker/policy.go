package broker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/corral-dev/corral/core/approval"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/toolreg"
)

// AllowList is the allow-list a box's broker builds at now, each rule with
// its source, for `corral egress`. If the config does not load, it returns
// the approvals alone and the error.
func AllowList(l paths.Layout, boxName, projectDir string, platform config.Platform, now time.Time) ([]approval.Rule, error) {
	bp, err := newBoxPolicy(l, boxName, projectDir, platform, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return nil, err
	}
	bp.now = func() time.Time { return now }
	rules, err := bp.rules()
	if err == nil {
		return rules, nil
	}
	list, lerr := bp.store.List(now)
	if lerr != nil {
		return nil, errors.Join(err, lerr)
	}
	return approval.WithoutConfig(bp.toolchains(), list), err
}

// boxPolicy builds a box's egress policy from its files: the agent's
// default hosts and the egress config (boxmeta.Resolve on the box's project),
// then the approvals.
//
// The repository's .corral.toml is read once, when the policy is made (at
// broker start, which is box start): the project directory is box-writable,
// and a box must never change its own policy. Reloads follow the
// host-owned files only (global and trusted config, approvals) and check
// the same snapshot of the repository file against them each time.
type boxPolicy struct {
	layout   paths.Layout
	box      string
	project  string
	snapshot *config.Snapshot // the repository file, as read at start
	platform config.Platform
	ranges   []egress.AllowEntry // extra ranges (ExtraRanges), parsed at start
	store    *approval.Store
	// golden is the box's golden image ("" for none): its record is the
	// box's toolchains group, followed like the host-owned files.
	golden string
	logger *slog.Logger
	now    func() time.Time

	mu        sync.Mutex
	cfg       *config.Result      // last config that loaded
	cfgRules  []approval.Rule     // its rules (approval.ConfigRules)
	approvals []approval.Approval // last approvals that loaded
	learning  approval.Learning   // last learning window that loaded
	next      time.Time           // earliest expiry among the active approvals
	changed   chan struct{}       // next changed
}

func newBoxPolicy(l paths.Layout, boxName, projectDir string, platform config.Platform, ranges []string, logger *slog.Logger) (*boxPolicy, error) {
	store, err := approval.Open(l, boxName)
	if err != nil {
		return nil, err
	}
	extra, err := egress.ParseAllowList(nil, ranges)
	if err != nil {
		return nil, fmt.Errorf("the extra ranges of box %s: %w", boxName, err)
	}
	golden := ""
	if m, err := boxmeta.Read(l, boxName); err == nil {
		golden = m.Golden
	}
	return &boxPolicy{layout: l, box: boxName, project: projectDir, snapshot: config.ReadSnapshot(projectDir),
		platform: platform, ranges: extra, store: store, golden: golden,
		logger: logger, now: time.Now, changed: make(chan struct{}, 1)}, nil
}

// toolchains is the toolchains group of the box: what its golden image
// recorded. A box made without a golden, or from one built before corral
// recorded toolchains, has none; an unreadable record is logged and counts
// as none (the group only ever adds hosts).
func (b *boxPolicy) toolchains() approval.Toolchains {
	if b.golden == "" {
		return approval.Toolchains{}
	}
	rec, err := toolreg.Read(b.layout, b.golden)
	if err != nil {
		if !errors.Is(err, toolreg.ErrNoRecord) {
			b.logger.Error("reading the toolchains group", "box", b.box, "err", err)
		}
		return approval.Toolchains{}
	}
	return approval.Toolchains{Golden: b.golden, Entries: rec.Entries()}
}

// files are the host-owned files the policy follows, for the watcher.
// Nothing under the project directory is among them.
func (b *boxPolicy) files() []string {
	files := []string{b.layout.GlobalConfig(), b.layout.ProjectConfig(b.box), b.store.Path(), approval.LearnPath(b.layout, b.box)}
	if b.golden != "" {
		files = append(files, b.layout.GoldenRecord(b.golden))
	}
	return files
}

// loadConfig loads the box's effective config and the rules it gives
// (approval.ConfigRules: the agent, the groups, every layer's egress). A
// config with problems is an error as a whole: a failed load's partial
// result may hold a layer the trust policy refused. An entry the grant
// check refuses is no error: it is listed, refused, and in force nowhere.
func (b *boxPolicy) loadConfig() (config.Result, []approval.Rule, error) {
	r, err := boxmeta.Resolve(b.layout, boxmeta.ResolveOptions{Dir: b.project, Platform: b.platform, Snapshot: b.snapshot})
	if err != nil {
		return config.Result{}, nil, fmt.Errorf("loading the config of box %s: %w", b.box, err)
	}
	if r.Project.Box != b.box {
		return config.Result{}, nil, fmt.Errorf("loading the config of box %s: its project %s now belongs to box %s", b.box, b.project, r.Project.Box)
	}
	rules, err := approval.ConfigRules(r.Loaded, b.toolchains())
	if err != nil {
		return config.Result{}, nil, fmt.Errorf("loading the allow-list of box %s: %w", b.box, err)
	}
	return r.Loaded, rules, nil
}

// rules returns the allow-list in force now. The config and the approvals
// are loaded separately and each keeps its last good value when it fails to
// load (the failure is logged): a broken config must neither drop the
// allow-list nor keep an approval past its expiry. Before anything has
// loaded, a failure is returned.
func (b *boxPolicy) rules() ([]approval.Rule, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if cfg, rules, err := b.loadConfig(); err != nil {
		if b.cfg == nil {
			return nil, err
		}
		b.logger.Error("reloading egress config; keeping the previous one", "box", b.box, "err", err)
		// The previous config, with the golden's record as it is now (the
		// record is followed on its own; it loaded with this config before).
		if rules, err := approval.ConfigRules(*b.cfg, b.toolchains()); err == nil {
			b.cfgRules = rules
		}
	} else {
		b.cfg, b.cfgRules = &cfg, rules
	}
	if all, err := b.store.All(); err != nil {
		if b.approvals == nil {
			return nil, err
		}
		b.logger.Error("reloading egress approvals; keeping the previous ones", "box", b.box, "err", err)
	} else {
		if all == nil {
			all = []approval.Approval{}
		}
		b.approvals = all
	}
	if lr, err := approval.ReadLearning(b.layout, b.box); err != nil {
		b.logger.Error("reloading the learning window; keeping the previous one", "box", b.box, "err", err)
	} else {
		b.learning = lr
	}
	now := b.now()
	var active []approval.Approval
	for _, a := range b.approvals {
		if a.ActiveAt(now) {
			active = append(active, a)
		}
	}
	next := approval.NextExpiry(active)
	if b.learning.ActiveAt(now) && (next.IsZero() || b.learning.Until.Before(next)) {
		next = b.learning.Until // learning ends without a file change too
	}
	if !next.Equal(b.next) {
		b.next = next
		select {
		case b.changed <- struct{}{}:
		default:
		}
	}
	return approval.WithApprovals(b.cfgRules, active), nil
}

// learningAt reports whether the box learns at now (as last loaded).
func (b *boxPolicy) learningAt(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.learning.ActiveAt(now)
}

// load returns the policy in force now and the once-approvals, each as its
// own rule: a once-approval admits one connection (see approval.Store.Consume)
// and is not part of the policy. While the box learns, the policy is
// egress.Policy.Learning of the allow-list.
func (b *boxPolicy) load() (*egress.Policy, []egress.OnceRule, error) {
	rules, err := b.rules()
	if err != nil {
		return nil, nil, err
	}
	var lasting, once []approval.Rule
	for _, r := range approval.Allowed(rules) { // refused rules are in force nowhere
		if r.Origin == approval.OriginApproval && r.Source == string(approval.ScopeOnce) {
			once = append(once, r)
		} else {
			lasting = append(lasting, r)
		}
	}
	// The one build of this reload (rules assembled the config's rules
	// once, each entry in the one grammar, egress.ParseAllowEntry).
	entries := append(approval.Entries(lasting), b.ranges...)
	// The organisation's deny_egress binds every connection, by name and
	// by resolved address, whatever the allow-list or learning says.
	denied := config.SystemManaged().DenyEntries()
	p := egress.NewPolicy(entries).Deny(denied)
	if b.learningAt(b.now()) {
		p = p.Learning()
	}
	// A once-approval's policy is its entry with every range in force.
	var ranges []egress.AllowEntry
	for _, e := range entries {
		if e.IsRange() {
			ranges = append(ranges, e)
		}
	}
	var onceRules []egress.OnceRule
	for _, r := range once {
		op := egress.NewPolicy(append(approval.Entries([]approval.Rule{r}), ranges...)).Deny(denied)
		onceRules = append(onceRules, egress.OnceRule{Entry: r.Entry, Policy: op})
	}
	return p, onceRules, nil
}

// hold is the configured hold_denied (0 before a config loaded).
func (b *boxPolicy) hold() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cfg == nil {
		return 0
	}
	return b.cfg.Settings().HoldDenied
}

// consumeOnce uses up the once-approval of entry (see egress.Config.ConsumeOnce).
func (b *boxPolicy) consumeOnce(entry string) bool {
	ok, err := b.store.Consume(entry)
	if err != nil {
		b.logger.Error("using a once-approval", "box", b.box, "entry", entry, "err", err)
		return false
	}
	return ok
}

func (b *boxPolicy) nextExpiry() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.next
}

// expireLoop reloads the policy when an approval expires, until ctx is
// done: expiry changes the policy without any file changing.
func (b *boxPolicy) expireLoop(ctx context.Context, reload func() (*egress.Policy, error)) {
	for {
		var fire <-chan time.Time
		var timer *time.Timer
		if next := b.nextExpiry(); !next.IsZero() {
			timer = time.NewTimer(max(next.Sub(b.now()), 0))
			fire = timer.C
		}
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return
		case <-b.changed:
		case <-fire:
			if _, err := reload(); err != nil {
				b.logger.Error("expiring egress approvals", "box", b.box, "err", err)
			}
		}
		if timer != nil {
			timer.Stop()
		}
	}
}
