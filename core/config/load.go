package config

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"path/filepath"
	"slices"
	"strings"

	"github.com/corral-dev/corral/core/egress"
)

// ProjectFile is the name of a repository's config file.
const ProjectFile = ".corral.toml"

// Request says which layers to load for a project.
type Request struct {
	Platform    Platform
	ProjectDir  string // absolute, symlink-free; "" loads no project layer
	GlobalPath  string
	TrustedPath string
	Flags       Config // the flags layer; unset fields are not applied
	HostMemory  uint64
	HostCPUs    int
	// Managed is the organisation's policy (the managed layer); nil: the
	// policy in force on this machine (SystemManaged).
	Managed *Managed
	// Snapshot, when set, is the repository's file as read earlier (by
	// ReadSnapshot, at box start): Load checks and applies it instead of
	// reading the box-writable file again. A running box's broker loads
	// with the snapshot taken when it started, so nothing the box writes
	// into its project reaches its policy before the next start.
	Snapshot *Snapshot

	// trustedData, when set, is the trusted layer's content, used instead
	// of reading TrustedPath (AddToTrusted checks a layer before writing it).
	trustedData []byte
}

// Snapshot is a repository's .corral.toml as read at one moment.
type Snapshot struct {
	Layer Layer  // decoded; empty when the file was missing or refused
	Hash  string // "sha256:<hex>" of the file's bytes; "" when missing or unreadable
	Err   error  // why the file was refused, or nil
}

// ReadSnapshot reads and decodes the repository file of projectDir now.
// It does not apply the trust policy: Load does, against the host layers
// in force at each load.
func ReadSnapshot(projectDir string) *Snapshot {
	path := filepath.Join(projectDir, ProjectFile)
	data, err := readLayerFile(path)
	if err != nil || data == nil {
		return &Snapshot{Layer: Layer{Kind: KindProject, Path: path}, Err: err}
	}
	l, err := Parse(KindProject, path, data)
	sum := sha256.Sum256(data)
	return &Snapshot{Layer: l, Hash: "sha256:" + hex.EncodeToString(sum[:]), Err: err}
}

// Result is a loaded configuration.
type Result struct {
	Effective
	Layers []Layer
	// Requests are what the repository's file asks for and only the user
	// can grant (see takeRequests); ProjectHash pins them to the file.
	Requests    []RepoRequest
	ProjectHash string
	// Managed is the organisation's policy the config was held to (never
	// nil after Load).
	Managed *Managed

	// req is the request that loaded it, its repository snapshot pinned
	// (AddToTrusted loads it again with a new trusted layer).
	req Request
}

// RequestStatus is the answer a repository's request has: granted by a
// host layer, pending the user's approval, or refused by the grant check
// (no path of corral can grant it).
type RequestStatus string

const (
	RequestGranted RequestStatus = "granted"
	RequestPending RequestStatus = "pending"
	RequestRefused RequestStatus = "refused"
)

// RepoRequest is one entry a repository's .corral.toml requests.
type RepoRequest struct {
	Key   string `json:"key"`   // one of RequestKeys
	Entry string `json:"entry"` // as written in the file
	File  string `json:"file"`
	Line  int    `json:"line,omitempty"`
	// Pending: the user may still approve it (Status pending). A refused
	// request is never pending: it is a verdict.
	Pending bool          `json:"pending"`
	Status  RequestStatus `json:"status"`
	// Risk, Why and Fix are the grant check's verdict (CheckGrant) in the
	// loaded config's context: why a refused request can never be granted
	// (and what to ask for instead), or why a flagged one deserves a look.
	Risk Risk   `json:"risk"`
	Why  string `json:"why,omitempty"`
	Fix  string `json:"fix,omitempty"`
}

// Pending returns the requests the user may still approve: not granted,
// not refused.
func (r Result) Pending() []RepoRequest { return r.requests(RequestPending) }

// RefusedRequests returns the requests the grant check refuses: they can
// never be granted, and the box runs without them.
func (r Result) RefusedRequests() []RepoRequest { return r.requests(RequestRefused) }

func (r Result) requests(s RequestStatus) []RepoRequest {
	var out []RepoRequest
	for _, q := range r.Requests {
		if q.Status == s {
			out = append(out, q)
		}
	}
	return out
}

// judgeRequests gives each request its status and the grant check's
// verdict, in the context of the merged config (low_host_ports). A request
// a host layer grants keeps that status (the layer's entry is checked
// where it is in force: Ignored, the allow-list).
func judgeRequests(reqs []RepoRequest, ctx GrantContext) {
	for i := range reqs {
		q := &reqs[i]
		v := CheckGrant(q.Key, q.Entry, ctx)
		if why := ctx.Managed.RepoRequestsRefused(); why != "" && q.Pending && v.Risk != RiskRefused {
			v = Verdict{Key: q.Key, Entry: q.Entry, Risk: RiskRefused, Why: why, Fix: "ask your organisation's administrator, or add the entry to your own layers"}
		}
		q.Risk, q.Why, q.Fix = v.Risk, v.Why, v.Fix
		switch {
		case !q.Pending:
			q.Status = RequestGranted
		case v.Risk == RiskRefused:
			q.Status, q.Pending = RequestRefused, false
		default:
			q.Status = RequestPending
		}
	}
}

// RequestKeys are the host-only keys a repository may request: their
// entries in .corral.toml are requests, granted by `corral approve`.
// toolchains and packages are among them because they change the golden
// image, whose recorded registries become the box's "toolchains" egress
// group: until approved, the golden is built without them.
var RequestKeys = []string{"egress", "egress_groups", "ports", "toolchains", "packages"}

// takeRequests moves the egress entries, egress groups, ports, toolchains
// and packages of a repository layer out of it: a repository may request
// hosts, forwarded ports and what the golden image installs, never allow
// them. Each entry is pending unless a host
// layer (global or trusted) already holds exactly it; the layer returned
// sets none of these keys, so the merge never sees the requests. Other
// host-only keys (mounts, image, sudo, ...) stay violations.
func takeRequests(l Layer, host []Layer) (Layer, []RepoRequest) {
	var reqs []RepoRequest
	for _, e := range l.Config.Egress {
		granted := slices.ContainsFunc(host, func(h Layer) bool {
			return slices.ContainsFunc(h.Config.Egress, func(x string) bool { return sameEntry(x, e) })
		})
		reqs = append(reqs, RepoRequest{Key: "egress", Entry: e, File: l.Path, Line: l.Lines["egress"], Pending: !granted})
	}
	for _, g := range l.Config.EgressGroups {
		granted := slices.ContainsFunc(host, func(h Layer) bool { return slices.Contains(h.Config.EgressGroups, g) })
		reqs = append(reqs, RepoRequest{Key: "egress_groups", Entry: g, File: l.Path, Line: l.Lines["egress_groups"], Pending: !granted})
	}
	for _, e := range l.Config.PortEntries {
		granted := slices.ContainsFunc(host, func(h Layer) bool {
			return slices.ContainsFunc(h.Config.PortEntries, func(x string) bool { return SamePort(x, e) })
		})
		reqs = append(reqs, RepoRequest{Key: "ports", Entry: e, File: l.Path, Line: l.Lines["ports"], Pending: !granted})
	}
	for _, key := range []string{"toolchains", "packages"} {
		for _, e := range field(&l.Config, key).Interface().([]string) {
			granted := slices.ContainsFunc(host, func(h Layer) bool {
				return slices.Contains(field(&h.Config, key).Interface().([]string), e)
			})
			reqs = append(reqs, RepoRequest{Key: key, Entry: e, File: l.Path, Line: l.Lines[key], Pending: !granted})
		}
	}
	if reqs == nil {
		return l, nil
	}
	l.Config.Egress, l.Config.EgressGroups, l.Config.PortEntries = nil, nil, nil
	l.Config.Toolchains, l.Config.Packages = nil, nil // l is a copy; the snapshot's layer is untouched
	l.Set = setKeys(&l.Config)
	return l, reqs
}

// SamePort reports whether two ports entries forward the same way ("3000"
// and "3000:3000" do); an entry that does not parse equals nothing.
func SamePort(a, b string) bool {
	pa, erra := ParsePort(a)
	pb, errb := ParsePort(b)
	return erra == nil && errb == nil && pa == pb
}

// sameEntry compares allow-list entries by their canonical form (the one
// grammar, egress.ParseAllowEntry): case, a trailing dot and Unicode versus
// punycode do not matter. Entries that do not parse compare as host names.
func sameEntry(a, b string) bool {
	ca, erra := egress.CanonicalEntry(a)
	cb, errb := egress.CanonicalEntry(b)
	if erra == nil && errb == nil {
		return ca == cb
	}
	norm := func(s string) string { return strings.ToLower(strings.TrimSuffix(s, ".")) }
	return norm(a) == norm(b)
}

// Load reads every layer, validates each, applies the repository policy,
// and merges them. Any error wraps ErrViolation or is an I/O error; on
// error the partial result still carries every layer that parsed, so
// `config check` can report everything at once.
func Load(req Request) (Result, error) {
	var res Result
	var errs []error
	res.Layers = append(res.Layers, Defaults(req.Platform))

	// load reads a layer and validates it. A layer with unknown or
	// mistyped keys is never applied (ok is false), but what did decode is
	// still validated and, for the project, checked against the policy, so
	// that one run reports every problem.
	load := func(kind Kind, path string, data []byte) (l Layer, ok bool) {
		var err error
		if data != nil {
			l, err = Parse(kind, path, data)
		} else {
			l, err = LoadFile(kind, path)
		}
		if err != nil {
			errs = append(errs, err)
		}
		errs = append(errs, validate(l)...)
		return l, err == nil
	}

	global, ok := load(KindGlobal, req.GlobalPath, nil)
	if ok {
		res.Layers = append(res.Layers, global)
	}
	// The trusted layer is read before the project's (it is applied
	// after it): a repository's requests are answered by what the host's
	// layers already allow.
	var trusted Layer
	trustedOK := false
	if req.TrustedPath != "" {
		trusted, trustedOK = load(KindTrusted, req.TrustedPath, req.trustedData)
	}
	repoFile := ""
	if req.ProjectDir != "" {
		repoFile = filepath.Join(req.ProjectDir, ProjectFile)
		snap := req.Snapshot
		if snap == nil {
			snap = ReadSnapshot(req.ProjectDir)
		}
		req.Snapshot = snap
		proj, ok := snap.Layer, snap.Err == nil
		if snap.Err != nil {
			errs = append(errs, snap.Err)
		}
		errs = append(errs, validate(proj)...)
		res.ProjectHash = snap.Hash
		proj, res.Requests = takeRequests(proj, append(slices.Clone(res.Layers), trusted))
		below := Merge(res.Layers...).Config
		// The repository is judged against everything the user's own
		// layers allow, the trusted layer's included: a line the check
		// told the user to copy there takes effect.
		user, in := below, PolicyInput{
			ProjectDir: req.ProjectDir, TrustedPath: req.TrustedPath,
			HostMemory: req.HostMemory, HostCPUs: req.HostCPUs,
		}
		if trustedOK {
			user = Merge(append(slices.Clone(res.Layers), trusted)...).Config
			in.Trusted = &trusted
		}
		perrs, checked := checkProject(proj, user, in)
		errs = append(errs, perrs...)
		if ok {
			res.Layers = append(res.Layers, proj)
			errs = append(errs, unchecked(proj, below, Merge(res.Layers...).Config, checked)...)
		}
	}
	if trustedOK {
		res.Layers = append(res.Layers, trusted)
	}
	flags := Layer{Kind: KindFlags, Path: "flags", Config: req.Flags, Set: setKeys(&req.Flags)}
	errs = append(errs, validate(flags)...)
	res.Layers = append(res.Layers, flags)

	res.Effective = Merge(res.Layers...)
	res.Effective.Platform = req.Platform
	// The managed floor is applied to the merge, above every layer: no
	// layer of the user's or the repository's can lower it.
	res.Managed = req.Managed
	if res.Managed == nil {
		res.Managed = SystemManaged()
	}
	errs = append(errs, applyManaged(res.Managed, &res.Effective, res.Layers)...)
	ctx := res.Settings().GrantContext()
	ctx.Managed = res.Managed
	judgeRequests(res.Requests, ctx)
	req.trustedData = nil
	res.req = req
	errs = append(errs, checkFloors(&res.Effective, repoFile)...)
	errs = append(errs, checkAgent(&res.Effective)...)
	errs = append(errs, checkPortsMerged(&res.Effective)...)
	errs = append(errs, checkPlatform(req.Platform, &res.Effective)...)
	return res, errors.Join(errs...)
}
