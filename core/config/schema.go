// Package config loads corral's layered TOML configuration, merges the
// layers into one effective Config, and enforces the trust policy that
// keeps a repository's .corral.toml from widening host access.
//
// Layers, lowest first (later layers override earlier ones):
//
//  1. built-in defaults
//  2. global       ~/.corral/config.toml              trusted (the user's)
//  3. project      <project>/.corral.toml             restricted (the repository's)
//  4. trusted      ~/.corral/projects/<box>.toml      trusted (the user's, per box)
//  5. flags        command-line flags                 trusted
//
// Every layer decodes into the same Config struct. The merge rule of each
// key is part of the schema below (see Schema) and documented in
// docs/CONFIG.md, which is generated from it.
package config

import (
	"fmt"
	"time"

	"github.com/corral-dev/corral/core/agent"
	"github.com/corral-dev/corral/core/agentstate"
)

// Class is a key's trust class: what a repository's .corral.toml may do
// with it.
type Class string

const (
	// ClassHost keys widen or reach into the host; only trusted layers set them.
	ClassHost Class = "host-only"
	// ClassAdd keys are lists a repository may add to (paths stay inside the project).
	ClassAdd Class = "repo-may-add"
	// ClassTighten keys are ordered; a repository may only move them toward the strict end.
	ClassTighten Class = "repo-may-tighten"
	// ClassCapped keys are resources a repository may set within host-derived caps.
	ClassCapped Class = "repo-capped"
	// ClassFree keys do not affect host access; any layer may set them.
	ClassFree Class = "repo-may-set"
	// ClassEnv is env: a repository may set plain variables, never ones that
	// name or redirect secrets.
	ClassEnv Class = "repo-may-set-non-secret"
)

// MergeRule is how a later layer's value combines with the earlier ones.
type MergeRule string

const (
	// MergeReplace: a later layer that sets the key replaces the value.
	MergeReplace MergeRule = "replace"
	// MergeUnion: lists are concatenated in layer order, duplicates dropped.
	// An allow-list never shrinks by being set again in a later layer; remove
	// entries in the layer that added them.
	MergeUnion MergeRule = "union"
	// MergeKeys: maps merge per key; a later layer's entry replaces the same key.
	MergeKeys MergeRule = "per-key"
)

// Key describes one config key.
type Key struct {
	Name    string
	Type    string
	Default string // as shown in docs; "" means unset
	Class   Class
	Merge   MergeRule
	Doc     string
}

// Schema lists every key in documentation order.
var Schema = []Key{
	{"cpus", "integer", "2", ClassCapped, MergeReplace, "Virtual CPUs. A repository may ask for at most the host's CPU count."},
	{"memory", "size string", `"4GiB"`, ClassCapped, MergeReplace, "Memory cap of the VM (KiB, MiB, GiB, TiB). A repository may ask for at most half the host's RAM."},
	{"disk", "size string", `"50GiB"`, ClassCapped, MergeReplace, "Disk size of the VM. A repository may ask for at most 200GiB."},
	{"image", "string", "platform default", ClassHost, MergeReplace, "Guest image: an https URL, a local qcow2/raw file, or a directory holding rootfs.qcow2, vmlinuz and initrd.img (direct kernel boot). The default on both platforms is a digest-pinned Ubuntu 24.04 cloud image."},
	{"vm_type", "string", `"vz" on macOS, "qemu" on Linux`, ClassHost, MergeReplace, `Lima VM driver: "vz" or "qemu". On macOS "qemu" (HVF) lets corral enforce the egress funnel in the VM process.`},
	{"mount_type", "string", `"virtiofs" on macOS, "9p" on Linux and with vm_type "qemu"`, ClassHost, MergeReplace, `How the project is shared: "virtiofs", "9p" or "reverse-sshfs". Lima takes virtiofs or reverse-sshfs with vz, and 9p or reverse-sshfs with qemu on macOS. reverse-sshfs is not a boundary (guest root can drive the host's sftp-server) and the strict profile refuses it.`},
	{"toolchains", "list of strings", "[]", ClassHost, MergeUnion, "Language toolchains baked into the golden image: " + fmt.Sprint(Toolchains) + ". Their registries, recorded at the golden build, become the box's \"toolchains\" egress group; some can carry data out (a Go module proxy fetches any module path from its origin; the npm, Python and crates registries accept uploads). In a repository's .corral.toml a toolchain is a request: until `corral approve` grants it, the golden image is built without it."},
	{"packages", "list of strings", "[]", ClassHost, MergeUnion, "Debian packages baked into the golden image (installed as root at the golden build). In a repository's .corral.toml a package is a request, like a toolchain: until `corral approve` grants it, the golden image is built without it."},
	{"hide", "list of paths", "[]", ClassAdd, MergeUnion, "Project paths hidden from the box. Relative to the project; must stay inside it. On Linux (qemu) the host covers each one that exists at the start with an empty read-only directory or file for the VM, so guest root cannot read it either; elsewhere only the guest's own read-only mount covers it. A change applies at `corral rebuild`."},
	{"box_dirs", "list of paths", "[]", ClassAdd, MergeUnion, "Project paths whose contents live on the box's own disk (e.g. node_modules), not the host's. Relative; inside the project."},
	{"readonly_project", "boolean", "false", ClassTighten, MergeReplace, "Mount the project read-only. A repository may turn it on, not off."},
	{"git_shadow", "boolean", "true", ClassTighten, MergeReplace, "Keep the box from writing the host's git directory: on Linux qemu binds it read-only for the VM (host-enforced), on macOS the guest mounts it read-only; git in the box writes to a shadow on the box's disk (get commits out with `corral pull`). false lets the box write .git (the host guard then reverts and reports changes to what git executes). Only trusted layers may turn it off; the strict profile refuses false."},
	{"source", "string", `"mount"`, ClassTighten, MergeReplace, `"mount" shares the project directory with the box (under the git shadow, the box's git writes stay in the box). "clone" never mounts the project: at its first boot the box clones the repository (its committed branches and tags, from a bundle the host writes) onto its own disk, at the same path; ` + "`corral pull`" + ` brings its commits back. clone is the strongest mode: use it for untrusted repositories or unattended agents, when the box need not see uncommitted files and you review its work as commits. Order: mount < clone.`},
	{"network", "string", `"broker"`, ClassTighten, MergeReplace, `"full" (no filter), "learn" (broker mode that, for learn_for, also allows public destinations off the allow-list and logs them: ` + "`corral egress learn`" + ` proposes an allow-list from them), "broker" (only the host allow-list proxy) or "offline" (loopback only). Order: full < learn < broker < offline. The strict profile turns full and learn into broker.`},
	{"learn_for", "duration", `"30m"`, ClassHost, MergeReplace, `How long learning lasts (network = "learn" or ` + "`corral up --learn`" + `), at most 24h. Learning starts at the box's first start with network = "learn" (or at each ` + "`corral up --learn`" + `) and ends when this time is up or ` + "`corral egress learn --apply`" + ` writes the proposal; the broker then enforces the allow-list again. Private and special-purpose addresses stay refused while learning.`},
	{"egress", "list of strings", "[]", ClassHost, MergeUnion, "Extra hosts the broker allows: host, *.suffix, host:port or host:*. Entries without a port allow 443 and 80. A CIDR range (e.g. 10.1.2.0/24) explicitly allows private or loopback addresses, which the broker otherwise denies. In a repository's .corral.toml an entry is a request, never a permission: `corral config check` lists pending requests, and `corral approve` writes the ones you accept to the trusted layer (with the repository file's content hash); when the file changes, new entries are pending again and approved ones stay. Every entry passes the one grant check (corral allow, approve, egress learn --apply and the app's Allow all use it): no wildcard at or above a public suffix (*.com, *.co.uk), no range wider than IPv4 /16 or IPv6 /48 (loopback aside), none covering a cloud metadata address (169.254.169.254) or 0.0.0.0/8; IPv6 forms that carry IPv4 addresses (::ffff:0:0/96, NAT64, 6to4) are judged by the IPv4 range. Host names may hold '_'. Such an entry written by hand is ignored by the broker and reported by `corral config check` and `corral egress`; use network = \"full\" to turn the filter off."},
	{"egress_groups", "list of strings", "[]", ClassHost, MergeUnion, "Named groups of hosts the broker allows, kept in core/egress/groups.go: " + fmt.Sprint(egressGroupNames()) + ". `corral egress groups` lists their hosts. The group \"toolchains\" is in force without being named: the registries, proxies and mirrors the golden image's toolchains are configured for (npm, Go, pip, cargo, apt), asked from the toolchains at golden build and recorded with the golden. In a repository's .corral.toml a group is a request, like an egress entry (`corral approve`)."},
	{"ports", "list of strings", "[]", ClassHost, MergeUnion, "Guest TCP ports forwarded to the host's 127.0.0.1 (never another address): \"3000\" (the same port) or \"8080:80\" (host 8080 to guest 80). Integers 1-65535, no port twice, host ports from 1024 unless low_host_ports = true. Applied at every start without a rebuild (Lima reads its port forwards when it starts a box); `corral port BOX 3000` adds one to the trusted layer and, to a running box, at once through corral's ssh master. The host opens the connections (the guest gets no egress: the funnel is unchanged). In a repository's .corral.toml an entry is a request that `corral approve` grants, as for egress."},
	{"host_ports", "list of integers", "[]", ClassHost, MergeUnion, "Host loopback ports the box may reach, one by one (never a range; from 1024, at most 16, none in corral's broker range), e.g. [63342] for an IDE's server that an agent's IDE integration (Claude Code's /ide) connects to. In the box each is at PROXY_HOST:PORT, the broker's address (192.168.5.4 under the host funnel, 192.168.5.2 on vz; `corral info` lists them; a client that honours the proxy variables must be told to connect directly, e.g. NO_PROXY, as the broker refuses a CONNECT to a private address). With vm_type = \"qemu\" in broker mode each is one more guestfwd rule of the box's qemu to the host's 127.0.0.1:PORT (host-enforced: the VM process still reaches nothing else); on vz the guest's nftables open PROXY_HOST:PORT (guest-enforced, like the rest of vz's funnel). Broker mode only. Applied at every start. Only trusted layers may set it: the box talks to a host service."},
	{"low_host_ports", "boolean", "false", ClassHost, MergeReplace, "Allow host ports below 1024 in ports."},
	{"hold_denied", "duration", `"0"`, ClassHost, MergeReplace, `Hold a connection the broker denies by host or port for up to this long (at most 10m) instead of answering at once: the app asks as for any denial, and an approval given meanwhile (` + "`corral allow`" + `, the menu) lets the held connection proceed with no retry; at the end of the hold it is answered 403 as before. At most 8 connections per box are held at once; more are denied at once. "0" never holds. Only trusted layers may set it: a hold keeps the box's tools waiting on the user.`},
	{"upstream_proxy", "table", "", ClassHost, MergeReplace, "{ url = \"http://proxy.example.com:3128\" or \"socks5://127.0.0.1:1080\", keychain = { service, account }, no_proxy = [\"intranet.example.com\", \"*.corp.example\", \"10.0.0.0/8\"] }: the proxy the box's broker sends allowed traffic through (tunnels, plain http and the credential routes), after its own decision and checks, which are unchanged: it resolves the name, checks every address, and asks the proxy for the checked address (CONNECT 203.0.113.7:443 or a SOCKS5 CONNECT of the address), never the name, so the proxy resolves nothing; plain http goes through a tunnel too (the proxy must allow CONNECT to the ports the allow-list opens for it). keychain names the proxy's credentials: the item's account is the user name, its secret the password (Basic for http, RFC 1929 for socks5), read by the broker; never put them in url. no_proxy: hosts, *.suffix (or .suffix), addresses and ranges dialled directly. The proxy's own address may be loopback or private; the box can never reach it as a destination. A proxy that refuses or fails gives the box 502 and a decision line with reason upstream-proxy-refused or upstream-proxy-failed. The whole table is replaced by a later layer; a change applies when the box's broker restarts (corral stop, then up). A repository's .corral.toml may never set it, not even to the value your layers give."},
	{"agent", "string", `"claude"`, ClassHost, MergeReplace, "The box's agent: installed when its golden image is built, its state seeded, its hosts allowed by the broker. Built in: " + fmt.Sprint(agent.Builtins()) + "; or a name defined under [agents]. `corral agent NAME` (and `corral claude`, `corral codex`, `corral gemini`) run any agent the box has installed; `corral agents` lists them."},
	{"agents", "table of tables", "{}", ClassHost, MergeKeys, "NAME = { command = [\"aider\", \"--yes-always\"], install = \"…\", forward_env = [\"OPENAI_API_KEY\"], egress = [\"api.openai.com\"], state_dir = \".aider\" }: an agent besides the built-in ones. command is the argv a session runs (required); install is a shell script run as root once when the golden image of a box with agent = NAME is built; forward_env are host variables its sessions get when set; egress are hosts its broker allows while it is the box's agent; state_dir is where it keeps its state, relative to the box user's home (linked to the box's agent state). Built-in names cannot be redefined. Only trusted layers may define agents: an install step is code run as root in the golden build."},
	{"agent_state", "string", `"seeded"`, ClassTighten, MergeReplace, `Where the agent's state (settings, hooks, MCP servers, instructions, login) lives. "seeded": on the box's own disk, copied at its first boot from the host-owned template ~/.corral/agent-templates/<agent> (corral writes the first-run settings there; it is never mounted into a box). "isolated": on the box's own disk, starting empty. "shared": ~/.corral/agents/<agent> mounted writable into every box that chooses it — a trusted opt-in only: a box working on an untrusted repository can plant a hook or MCP server that the next session in another box runs, and the strict profile refuses it. Order: shared < seeded < isolated.`},
	{"profile", "string", `"default"`, ClassTighten, MergeReplace, `"default" or "strict". strict is a floor: network at least broker, no sudo in the box, no reverse-sshfs, no shared agent state.`},
	{"mounts", "list of tables", "[]", ClassHost, MergeUnion, "Extra host directories: { location = \"~/data\", mount_point = \"/data\", writable = false }."},
	{"forward_env", "list of strings", "[]", ClassHost, MergeUnion, "Host environment variables passed into sessions when set."},
	{"env", "table of strings", "{}", ClassEnv, MergeKeys, "Variables set in sessions. A repository may not set names that look like secrets, proxy settings, or agent endpoints."},
	{"env_from_host", "table of strings", "{}", ClassHost, MergeKeys, "NAME = \"HOST_VAR\": the session's NAME is the host's HOST_VAR. A session refuses to start when HOST_VAR is unset."},
	{"keychain_env", "table of tables", "{}", ClassHost, MergeKeys, "NAME = { service = \"…\", account = \"…\" }: read from the OS keychain unless NAME is exported. A missing item refuses the session."},
	{"git_tokens", "list of strings", "[]", ClassHost, MergeUnion, "Hosts (e.g. \"github.com\") whose token is read on the host and put in the session's environment for git's credential helper in the box. The explicit opt-out from brokering: prefer [credentials.NAME], which keeps the token on the host."},
	{"credentials", "table of tables", "{}", ClassHost, MergeKeys, "NAME = { upstream = \"https://…\", header = \"x-api-key\" | \"authorization\" | \"basic\" | \"x-goog-api-key\", keychain = { service, account } or env_from_host = \"HOST_VAR\", ca = \"/path/ca.pem\" }: a secret the box's broker holds. The box reaches the upstream at http://BROKER/corral/credential/TOKEN/NAME/ (TOKEN: issued to each session) and never sees the value; named anthropic, openai or gemini it is that agent's key, and every session gets the agent's base URL variable and a placeholder; git in the box fetches and pushes the upstream's https URLs through it (url.insteadOf). header \"basic\" sends Authorization: Basic x-access-token:SECRET (https git hosts), \"authorization\" sends Bearer, \"x-goog-api-key\" sends x-goog-api-key (Gemini API keys). ca adds a private CA for this upstream (verification is never off). Optional rules narrow what the credential may do: methods = [\"GET\", \"POST\"] (the HTTP methods allowed), paths = [\"/org/repo\", \"/org/repo.git\"] (path prefixes below the upstream's base path, matched on the path decoded once and on segment boundaries: \"/org/repo\" never allows \"/org/repository\"; a path another server could read otherwise, with an encoded / . \\ ; or %, a ; \\ ? or #, a non-ASCII byte or a dot segment, is refused for every credential; with paths, a header that may override the path, such as X-Original-URL, is refused), read_only = true (GET, HEAD and OPTIONS without a body; with header \"basic\", which declares a git host, also git's fetch by its protocol: POST .../git-upload-pack with no query, git's content type and a pkt-line body; never a push, neither POST .../git-receive-pack nor GET .../info/refs?service=git-receive-pack); with methods or read_only every method override is refused (an X-HTTP-Method-Override-like header in any spelling, _method in the query or in a form, multipart or JSON body); a request outside them is refused with 403 and logged. Sessions on a remote host use a credential held by this machine only when corral host grant names it for that host. Needs network = \"broker\". A repository may request a credential, never set one or its rules."},
	{"agent_credentials", "string", `"brokered"`, ClassTighten, MergeReplace, `How the box's agent's own key reaches it. "brokered": the key (keychain_env, env_from_host or the host environment, of the broker or else of the session, which hands it to the broker; claude: ANTHROPIC_API_KEY, else CLAUDE_CODE_OAUTH_TOKEN; codex: OPENAI_API_KEY; gemini: GEMINI_API_KEY, else GOOGLE_API_KEY) is held by the box's broker as [credentials.anthropic], [credentials.openai] or [credentials.gemini], and the session carries only a base URL (ANTHROPIC_BASE_URL, OPENAI_BASE_URL, GOOGLE_GEMINI_BASE_URL) and a placeholder. "forwarded": the key is put in the session's environment (where any process in the box can read it). Broker mode only; other modes forward. Order: forwarded < brokered.`},
	{"claude_install", "string", `"official"`, ClassHost, MergeReplace, `How a golden image gets Claude Code: "official" runs the official installer in the golden build (needs its hosts); "npm" installs the npm platform package pinned in core/pins/npm.txt, fetched on the host with the npm client and verified against its integrity hash (the golden build then needs no network for it).`},
	{"provision", "list of paths", "[]", ClassAdd, MergeUnion, "Repository scripts run in the box after corral's own provisioning. Relative; inside the project."},
	{"sudo", "boolean", "false", ClassHost, MergeReplace, "Keep passwordless sudo for the box user in broker and offline modes (full mode always has it). Guest root can undo the guest's own nftables rules, so this is only a boundary where the host enforces the funnel (Linux, vm_type qemu). The strict profile refuses it."},
	{"golden", "boolean", "true", ClassFree, MergeReplace, "Create boxes by cloning a shared golden image of the project-independent setup."},
	{"idle_stop", "duration", `"30m"`, ClassFree, MergeReplace, `Stop a box with no session and no activity for this long ("0" never).`},
	{"idle_action", "string", `"stop"`, ClassHost, MergeReplace, `What the idle rule (idle_stop) does to an idle box: "stop" shuts it down; "save" suspends it to disk (qemu only: the VM's memory is written into its disk, the VM process ends, and the next start resumes where it was). A box whose shares are in use, a box on vz, or a failed save is stopped instead. Set only in trusted layers: a save keeps the box's memory on the host's disk.`},
	{"save_when_free_below", "size string", `"0"`, ClassHost, MergeReplace, `When the host's available memory (Linux: MemAvailable; macOS: the kernel's memory-status level) is under this size, the idle sweep (every corral command, ` + "`corral stop --idle`" + `, the app's timer) saves the least recently used idle box instead of stopping it: a running qemu box with no session, idle for 5 minutes or its idle_stop if shorter (idle_stop "0" exempts a box), one box per sweep. The save frees the box's memory and keeps its state (the next start resumes it, as with idle_action = "save"); the menu shows the box as saved for low memory and the audit log records low-memory-save with the available memory and this threshold. A box that cannot be saved (a detachable session, a busy share, vz) is left to the next candidate. "0" turns it off. Read from the global file ~/.corral/config.toml only (the host's memory is one for all boxes); a repository may not set it: a save keeps the box's memory on the host's disk.`},
	{"stop_on_exit", "boolean", "false", ClassFree, MergeReplace, "Stop the box when its last session ends."},
	{"snapshots", "string", `"off"`, ClassFree, MergeReplace, `"auto" snapshots the box before every start; "off" only on request.`},
	{"snapshots_keep", "integer", "3", ClassFree, MergeReplace, "How many automatic snapshots to keep."},
	{"terminal", "string", `"Terminal" on macOS; on Linux the first terminal found`, ClassHost, MergeReplace, `The terminal app the menu opens sessions and shells in. macOS: "Terminal" (a .command script opened through LaunchServices, no Automation prompt), "iTerm2" (AppleScript run by osascript: allow Corral under System Settings › Privacy & Security › Automation), "Ghostty", or the name of another app that opens .command scripts. Linux: a terminal command that takes -e, tried before $TERMINAL.`},
	{"project_roots", "list of paths", "[]", ClassHost, MergeUnion, "Folders the menu's Projects lists repositories from: each is scanned one level deep for directories holding .git (at most 16 roots, 512 entries read per root, 50 repositories listed; symlinks below a root are not followed). Absolute or starting with ~/, e.g. [\"~/src\"]. A repository's .corral.toml may not set it."},
	{"host", "string", "", ClassHost, MergeReplace, "The remote host (a NAME from `corral host add`) the project's box runs on: every box command (`corral up`, `claude`, `run`, `ls`, `egress`, ...) runs there over ssh, with the same corral on both sides. Set it in ~/.corral/projects/<box>.toml; `corral --host NAME` chooses a host for one command, and `--host local` this machine. A repository's .corral.toml may not set it. See docs/REMOTE.md."},
}

// Toolchains corral knows how to install.
var Toolchains = []string{"go", "node", "python", "rust"}

// KeyByName returns the schema entry of a key.
func KeyByName(name string) (Key, bool) {
	for _, k := range Schema {
		if k.Name == name {
			return k, true
		}
	}
	return Key{}, false
}

// Mount is an extra host directory shared with the box.
type Mount struct {
	Location   string `toml:"location" json:"location"`
	MountPoint string `toml:"mount_point" json:"mount_point,omitempty"`
	Writable   bool   `toml:"writable" json:"writable"`
}

// SecretRef names an item in the OS keychain.
type SecretRef struct {
	Service string `toml:"service" json:"service"`
	Account string `toml:"account" json:"account"`
}

// Credential is one [credentials.NAME] table: a secret the box's broker
// holds and adds to requests to Upstream (see core/egress).
type Credential struct {
	Upstream    string     `toml:"upstream" json:"upstream"`
	Header      string     `toml:"header" json:"header"`
	Keychain    *SecretRef `toml:"keychain" json:"keychain,omitempty"`
	EnvFromHost string     `toml:"env_from_host" json:"env_from_host,omitempty"`
	CA          string     `toml:"ca" json:"ca,omitempty"`
	// Methods, Paths and ReadOnly narrow what the credential may be used
	// for (core/egress CredentialRules). The whole table is host-only, so
	// a repository can neither set nor widen them.
	Methods  []string `toml:"methods" json:"methods,omitempty"`
	Paths    []string `toml:"paths" json:"paths,omitempty"`
	ReadOnly bool     `toml:"read_only" json:"read_only,omitempty"`
}

// UpstreamProxy is the upstream_proxy table: the proxy a box's broker
// sends allowed traffic through (core/egress UpstreamProxy). Host-only,
// and refused outright in a repository layer.
type UpstreamProxy struct {
	URL      string     `toml:"url" json:"url"`
	Keychain *SecretRef `toml:"keychain" json:"keychain,omitempty"`
	NoProxy  []string   `toml:"no_proxy" json:"no_proxy,omitempty"`
}

// MaxHoldDenied bounds hold_denied: a tool held longer has given up anyway.
const MaxHoldDenied = 10 * time.Minute

// Duration is a time.Duration written as "30m" in TOML.
type Duration struct{ time.Duration }

// UnmarshalText parses "30m", "1h30m" or "0".
func (d *Duration) UnmarshalText(b []byte) error {
	s := string(b)
	if s == "0" || s == "off" || s == "never" {
		d.Duration = 0
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("invalid duration %q: use a number with a unit, like \"30m\" or \"2h\"", s)
	}
	if v < 0 {
		return fmt.Errorf("invalid duration %q: must not be negative", s)
	}
	d.Duration = v
	return nil
}

// MarshalText writes the duration back.
func (d Duration) MarshalText() ([]byte, error) {
	if d.Duration == 0 {
		return []byte("0"), nil
	}
	return []byte(d.Duration.String()), nil
}

// Config is one layer, or the effective merge of all layers. Pointer
// fields distinguish unset from the zero value: they are for decoding,
// merging and the trust policy. Everything else reads the effective
// values from Settings (Effective.Settings), where every default is
// applied and nothing is a pointer.
type Config struct {
	CPUs            *int                  `toml:"cpus" json:"cpus,omitempty"`
	Memory          *string               `toml:"memory" json:"memory,omitempty"`
	Disk            *string               `toml:"disk" json:"disk,omitempty"`
	Image           *string               `toml:"image" json:"image,omitempty"`
	VMType          *VMType               `toml:"vm_type" json:"vm_type,omitempty"`
	MountType       *MountType            `toml:"mount_type" json:"mount_type,omitempty"`
	Toolchains      []string              `toml:"toolchains" json:"toolchains,omitempty"`
	Packages        []string              `toml:"packages" json:"packages,omitempty"`
	Hide            []string              `toml:"hide" json:"hide,omitempty"`
	BoxDirs         []string              `toml:"box_dirs" json:"box_dirs,omitempty"`
	ReadonlyProject *bool                 `toml:"readonly_project" json:"readonly_project,omitempty"`
	GitShadow       *bool                 `toml:"git_shadow" json:"git_shadow,omitempty"`
	Source          *Source               `toml:"source" json:"source,omitempty"`
	Network         *Network              `toml:"network" json:"network,omitempty"`
	Egress          []string              `toml:"egress" json:"egress,omitempty"`
	EgressGroups    []string              `toml:"egress_groups" json:"egress_groups,omitempty"`
	LearnFor        *Duration             `toml:"learn_for" json:"learn_for,omitempty"`
	PortEntries     []string              `toml:"ports" json:"ports,omitempty"`
	HostPorts       []int                 `toml:"host_ports" json:"host_ports,omitempty"`
	LowHostPorts    *bool                 `toml:"low_host_ports" json:"low_host_ports,omitempty"`
	HoldDenied      *Duration             `toml:"hold_denied" json:"hold_denied,omitempty"`
	UpstreamProxy   *UpstreamProxy        `toml:"upstream_proxy" json:"upstream_proxy,omitempty"`
	Agent           *string               `toml:"agent" json:"agent,omitempty"`
	Agents          map[string]agent.Def  `toml:"agents" json:"agents,omitempty"`
	AgentState      *agentstate.Mode      `toml:"agent_state" json:"agent_state,omitempty"`
	Profile         *Profile              `toml:"profile" json:"profile,omitempty"`
	Mounts          []Mount               `toml:"mounts" json:"mounts,omitempty"`
	ForwardEnv      []string              `toml:"forward_env" json:"forward_env,omitempty"`
	Env             map[string]string     `toml:"env" json:"env,omitempty"`
	EnvFromHost     map[string]string     `toml:"env_from_host" json:"env_from_host,omitempty"`
	KeychainEnv     map[string]SecretRef  `toml:"keychain_env" json:"keychain_env,omitempty"`
	GitTokens       []string              `toml:"git_tokens" json:"git_tokens,omitempty"`
	Credentials     map[string]Credential `toml:"credentials" json:"credentials,omitempty"`
	AgentCreds      *AgentCredentials     `toml:"agent_credentials" json:"agent_credentials,omitempty"`
	ClaudeInstall   *ClaudeInstall        `toml:"claude_install" json:"claude_install,omitempty"`
	Provision       []string              `toml:"provision" json:"provision,omitempty"`
	Sudo            *bool                 `toml:"sudo" json:"sudo,omitempty"`
	Golden          *bool                 `toml:"golden" json:"golden,omitempty"`
	IdleStop        *Duration             `toml:"idle_stop" json:"idle_stop,omitempty"`
	StopOnExit      *bool                 `toml:"stop_on_exit" json:"stop_on_exit,omitempty"`
	IdleAction      *IdleAction           `toml:"idle_action" json:"idle_action,omitempty"`
	SaveFreeBelow   *string               `toml:"save_when_free_below" json:"save_when_free_below,omitempty"`
	Snapshots       *Snapshots            `toml:"snapshots" json:"snapshots,omitempty"`
	SnapshotsKeep   *int                  `toml:"snapshots_keep" json:"snapshots_keep,omitempty"`
	Terminal        *string               `toml:"terminal" json:"terminal,omitempty"`
	ProjectRoots    []string              `toml:"project_roots" json:"project_roots,omitempty"`
	Host            *string               `toml:"host" json:"host,omitempty"`
}
