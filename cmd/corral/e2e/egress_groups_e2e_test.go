//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/toolreg"
	"github.com/corral-dev/corral/guest"
)

// toolchainsGroup and learnThenEnforce are subtests of TestHostFunnel: they
// run on its broker-mode box (egress = ["127.0.0.0/8"], so that names such
// as localhost reach the test's servers on host loopback through the
// broker). Together they add about a minute: ten sessions on the running
// box and no boot; the guest script starts npm, go and pip under TCG when
// the image has them.

// toolchainsGroup: the golden of the box recorded its toolchains group at
// its build; the guest script run in the box now finds the same entries;
// the broker lists them; and a registry the record names (a fake one on
// host loopback, written into the record as a mirror would be) is reached
// through the broker with no approval, as soon as the record changes.
func toolchainsGroup(t *testing.T, x *h, proxy string) {
	var groups struct {
		Toolchains struct {
			Golden     string
			Registries []toolreg.Registry
			Missing    string
		}
	}
	must(t, json.Unmarshal([]byte(x.ok("egress", "groups", "--json")), &groups))
	tc := groups.Toolchains
	if tc.Golden == "" || tc.Missing != "" {
		t.Fatalf("the box's golden recorded no toolchains group: %+v", tc)
	}
	rec, err := toolreg.Read(layout(x), tc.Golden)
	must(t, err)

	// The same question asked in the box (a clone of the golden) gets the
	// same answer.
	live, err := toolreg.ParseBytes([]byte(x.ok("run", "--", "sh", "-c", guest.ToolchainRegistries())))
	must(t, err)
	got, want := live.Entries(), rec.Entries()
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the box's toolchains now say %v, the golden recorded %v", got, want)
	}

	var eg struct {
		AllowList []struct{ Entry, Origin, Source string } `json:"allow_list"`
	}
	must(t, json.Unmarshal([]byte(x.ok("egress", "--json")), &eg))
	for _, e := range want {
		if !slices.ContainsFunc(eg.AllowList, func(r struct{ Entry, Origin, Source string }) bool {
			return r.Entry == e && r.Origin == "group" && strings.HasPrefix(r.Source, "toolchains")
		}) {
			t.Errorf("corral egress lacks the recorded %s as a group entry: %+v", e, eg.AllowList)
		}
	}

	// A fake registry on host loopback, named by the record as a mirror
	// would be.
	reg := startHostServer(t)
	url := "http://localhost:" + reg.port + "/registry/pkg"
	get := func() string {
		return x.ok("run", "--", "curl", "-sS", "--max-time", "30", "--noproxy", "", "-o", "/dev/null", "-w", "%{http_code}", "-x", proxy, url)
	}
	if got := get(); got != "403" {
		t.Fatalf("before the record names it: HTTP %q, want 403", got)
	}
	mirror := rec
	mirror.Registries = append(slices.Clone(rec.Registries), toolreg.Registry{Entry: "localhost:" + reg.port, Tool: toolreg.ToolNPM, Source: "registry"})
	must(t, toolreg.Write(layout(x), mirror))
	defer func() { must(t, toolreg.Write(layout(x), rec)) }()
	deadline := time.Now().Add(10 * time.Second)
	code := get()
	for code != "200" && time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
		code = get()
	}
	if code != "200" || reg.count("/registry/pkg") == 0 {
		t.Errorf("the recorded registry: HTTP %q (hits %d), want 200 with no approval", code, reg.count("/registry/pkg"))
	}
	if b, _ := os.ReadFile(filepath.Join(x.home, "projects", x.box+".approvals.json")); strings.Contains(string(b), reg.port) {
		t.Errorf("an approval names the registry: %s", b)
	}
}

// learnThenEnforce: corral up --learn on the running box lets a host off
// the allow-list through (logged as learning), corral egress learn
// proposes it, --apply writes it to the trusted layer and ends learning:
// the proposed host still answers, another one is denied again.
func learnThenEnforce(t *testing.T, x *h, proxy string) {
	// --apply writes the trusted layer: it is put back as it was (it holds
	// more than egress: sudo, the git shadow opt-out).
	trustedPath := filepath.Join(x.home, "projects", x.box+".toml")
	before, err := os.ReadFile(trustedPath)
	must(t, err)
	defer func() { must(t, os.WriteFile(trustedPath, before, 0o600)) }()
	learned, other := startHostServer(t), startHostServer(t)
	get := func(s *hostServer) string {
		return x.ok("run", "--", "curl", "-sS", "--max-time", "30", "--noproxy", "", "-o", "/dev/null", "-w", "%{http_code}", "-x", proxy,
			"http://localhost:"+s.port+"/learn")
	}
	if got := get(learned); got != "403" {
		t.Fatalf("before learning: HTTP %q, want 403", got)
	}
	x.ok("up", "--learn")
	var ls []struct {
		Name          string    `json:"name"`
		LearningUntil time.Time `json:"learning_until"`
	}
	jsonList(t, x.ok("ls", "--json"), "corral.boxes/v1", "boxes", &ls)
	if i := slices.IndexFunc(ls, func(e struct {
		Name          string    `json:"name"`
		LearningUntil time.Time `json:"learning_until"`
	}) bool {
		return e.Name == x.box
	}); i < 0 || ls[i].LearningUntil.Before(time.Now().Add(25*time.Minute)) {
		t.Errorf("corral ls does not say the box learns for 30m: %+v", ls)
	}
	deadline := time.Now().Add(10 * time.Second)
	code := get(learned)
	for code != "200" && time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
		code = get(learned)
	}
	if code != "200" {
		t.Fatalf("while learning: HTTP %q, want 200", code)
	}
	_, banner, _ := x.corral("run", "--", "true")
	if !strings.Contains(banner, "is learning until") {
		t.Errorf("the session's banner does not say the box learns: %q", banner)
	}
	var prop struct{ Entries []string }
	must(t, json.Unmarshal([]byte(x.ok("egress", "learn", "--json")), &prop))
	if !slices.Contains(prop.Entries, "localhost:"+learned.port) {
		t.Fatalf("the proposal lacks localhost:%s: %v", learned.port, prop.Entries)
	}
	x.ok("egress", "learn", "--apply")
	trusted, _ := os.ReadFile(filepath.Join(x.home, "projects", x.box+".toml"))
	if !strings.Contains(string(trusted), `"localhost:`+learned.port+`"`) {
		t.Errorf("the trusted layer lacks the learned host:\n%s", trusted)
	}
	// The broker reloads within about a second of the write, and learning
	// ends with it: poll until another host is denied (the reload is in
	// force), with a deadline, never a fixed sleep; then the applied host
	// must still answer.
	got := get(other)
	for deadline := time.Now().Add(30 * time.Second); got != "403" && time.Now().Before(deadline); got = get(other) {
	}
	if got != "403" {
		t.Errorf("another host after learning: HTTP %q, want 403", got)
	}
	if got := get(learned); got != "200" {
		t.Errorf("the applied host after learning: HTTP %q, want 200", got)
	}
}

func layout(x *h) paths.Layout { return paths.Layout{Home: x.home} }

// approveRequest follows, as a user would, what corral prints about the
// repository's pending request (egress = ["widen.example.test"], written
// by the caller): config check names the command; without a terminal that
// command says to add --yes; after it the check has nothing pending and
// the next session's request for the host is allowed by the broker (502:
// allowed, but the name resolves nowhere; a denial is 403). About 5 s.
func approveRequest(t *testing.T, x *h, proxy string) {
	out := x.ok("config", "check")
	const prefix = "to review and allow them: corral "
	i := strings.Index(out, prefix)
	if i < 0 || !strings.Contains(out, "widen.example.test") {
		t.Fatalf("config check does not offer the request for approval:\n%s", out)
	}
	cmd := strings.Fields(strings.SplitN(out[i+len(prefix):], "\n", 2)[0])
	if len(cmd) != 2 || cmd[0] != "approve" || cmd[1] != x.box {
		t.Fatalf("config check prints %q, want approve %s", cmd, x.box)
	}
	_, errOut, code := x.corral(cmd...)
	if code == 0 || !strings.Contains(errOut, "corral approve "+x.box+" --yes") {
		t.Fatalf("corral approve with no terminal: exit %d, stderr %q; want the --yes hint", code, errOut)
	}
	if got := x.ok(append(cmd, "--yes")...); !strings.Contains(got, "approving egress widen.example.test") {
		t.Errorf("corral approve --yes: %q", got)
	}
	if out := x.ok("config", "check"); strings.Contains(out, "notice:") {
		t.Errorf("config check still has pending requests after approve:\n%s", out)
	}
	get := func() string {
		return x.ok("run", "--", "curl", "-sS", "--max-time", "20", "-o", "/dev/null", "-w", "%{http_code}", "--noproxy", "", "-x", proxy, "http://widen.example.test/")
	}
	deadline := time.Now().Add(10 * time.Second)
	code2 := get()
	for code2 == "403" && time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
		code2 = get()
	}
	if code2 != "502" {
		t.Errorf("the approved host: HTTP %q, want 502 (allowed; the name resolves nowhere)", code2)
	}
}
