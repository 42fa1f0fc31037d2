package config

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/egress"
)

const testManaged = `# the organisation's floor
max_network = "broker"
deny_egress = ["*.corp.example", "secrets.example.net", "10.0.0.0/8"]
deny_credentials = ["openai"]
git_shadow = true
profile = "strict"
max_approval = "8h"
repo_requests = false

[audit]
forward = "syslog+udp://127.0.0.1:5514"
`

func mustManaged(t testing.TB, text string) *Managed {
	t.Helper()
	m, err := ParseManaged("/etc/corral/managed.toml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestManagedStrictKeys(t *testing.T) {
	_, err := ParseManaged("/etc/corral/managed.toml", []byte("max_network = \"broker\"\nMax_Network = \"full\"\n[audit]\nforwards = \"x\"\n"))
	if err == nil {
		t.Fatal("unknown keys accepted")
	}
	for _, want := range []string{"/etc/corral/managed.toml:2: Max_Network", "/etc/corral/managed.toml:4: audit.forwards"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

func TestManagedValues(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{`max_network = "wide"`, `max_network = wide`},
		{`profile = "lax"`, `profile = lax`},
		{`deny_egress = ["*.com/8"]`, `deny_egress = "*.com/8"`},
		{"[audit]\nforward = \"syslog+udp://192.0.2.1:514\"", "loopback"},
		{"[audit]\nforward = \"ftp://127.0.0.1:21\"", "scheme"},
		{"[audit]\nforward = \"http://127.0.0.1/x\"", "port"},
		{`max_approval = "soon"`, "invalid duration"},
	} {
		_, err := ParseManaged("m.toml", []byte(tc.text))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %q", tc.text, err, tc.want)
		}
	}
}

func TestChooseManaged(t *testing.T) {
	prof := &Managed{File: "managed preferences"}
	file := &Managed{File: "/etc/corral/managed.toml"}
	boom := errors.New("boom")
	if got := ChooseManaged(prof, nil, file, nil); got != prof {
		t.Errorf("profile and file: got %v, want the profile", got.File)
	}
	if got := ChooseManaged(nil, nil, file, nil); got != file {
		t.Errorf("file only: got %v", got)
	}
	if got := ChooseManaged(nil, boom, file, nil); got.Err == nil {
		t.Error("a profile that does not load fell back to the file")
	}
	if got := ChooseManaged(nil, nil, nil, boom); got.Err == nil || !got.active() {
		t.Error("a file that does not load is not in force as an error")
	}
	if got := ChooseManaged(nil, nil, nil, nil); got.active() {
		t.Error("no source is a policy")
	}
	// Failing closed: a policy that does not load refuses every grant.
	bad := ChooseManaged(nil, nil, nil, boom)
	if v := CheckGrant("egress", "example.com", GrantContext{Managed: bad}); v.Risk != RiskRefused {
		t.Errorf("broken policy granted %v", v)
	}
}

const testPlist = `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
	<key>PayloadUUID</key><string>5A1B</string>
	<key>max_network</key><string>offline</string>
	<key>deny_egress</key><array><string>*.corp.example</string></array>
	<key>git_shadow</key><true/>
	<key>repo_requests</key><false/>
	<key>max_approval</key><string>2h</string>
	<key>audit</key><dict><key>forward</key><string>http://127.0.0.1:8088/ingest</string></dict>
</dict>
</plist>`

func TestManagedPlistMapsToTheSameSchema(t *testing.T) {
	m, err := ParseManagedPlist("managed preferences dev.corral.Corral", []byte(testPlist))
	if err != nil {
		t.Fatal(err)
	}
	f := m.Floor
	if *f.MaxNetwork != NetworkOffline || !slices.Equal(f.DenyEgress, []string{"*.corp.example"}) || !*f.GitShadow ||
		*f.RepoRequests || f.MaxApproval.Duration != 2*time.Hour || f.Audit.Forward != "http://127.0.0.1:8088/ingest" {
		t.Errorf("floor %+v", f)
	}
	bad := strings.Replace(testPlist, "<key>git_shadow</key>", "<key>Git_Shadow</key>", 1)
	_, err = ParseManagedPlist("prefs", []byte(bad))
	if err == nil || !strings.Contains(err.Error(), "prefs: Git_Shadow") {
		t.Errorf("unknown plist key: %v", err)
	}
	for _, s := range []string{"<plist><array/></plist>", "<plist><dict><key>x</key><date>2020</date></dict></plist>", "not xml"} {
		if _, err := ParseManagedPlist("prefs", []byte(s)); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}

func TestManagedOrigin(t *testing.T) {
	m := mustManaged(t, testManaged)
	req := request(newProject(t, nil), "")
	req.Managed = m
	res, _ := Load(req)
	for _, key := range []string{"profile", "git_shadow"} {
		if o := res.Origin[key]; !slices.Equal(o, []string{"managed: /etc/corral/managed.toml"}) {
			t.Errorf("origin of %s = %q", key, o)
		}
	}
}

// TestFloorNeverLowered is the managed layer's property: whatever a
// user's layers, a repository's file, an approval or a live allow hold,
// the effective config and the grants in force stay within the floor.
func TestFloorNeverLowered(t *testing.T) {
	m := mustManaged(t, testManaged)
	r := rand.New(rand.NewPCG(42, 42))
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	entries := []string{"github.com", "*.corp.example", "build.corp.example", "corp.example:*", "*.example",
		"secrets.example.net", "SECRETS.example.net.", "10.1.2.0/24", "10.0.0.0/16", "192.168.1.0/24",
		"example.org", "*.example.net", "xn--bcher-kva.example"}
	layer := func() string {
		var b strings.Builder
		if r.IntN(2) == 0 {
			fmt.Fprintf(&b, "network = %q\n", pick(NetworkOrder...))
		}
		if r.IntN(2) == 0 {
			fmt.Fprintf(&b, "profile = %q\n", pick(ProfileOrder...))
		}
		if r.IntN(2) == 0 {
			fmt.Fprintf(&b, "git_shadow = %t\n", r.IntN(2) == 0)
		}
		var es []string
		for range r.IntN(4) {
			es = append(es, fmt.Sprintf("%q", pick(entries...)))
		}
		if es != nil {
			fmt.Fprintf(&b, "egress = [%s]\n", strings.Join(es, ", "))
		}
		if r.IntN(3) == 0 {
			fmt.Fprintf(&b, "[credentials.%s]\nupstream = \"https://api.example.org\"\nheader = \"authorization\"\nenv_from_host = \"TOKEN\"\n",
				pick("openai", "github", "anthropic"))
		}
		return b.String()
	}
	denied := func(e string) bool {
		a, err := egress.ParseAllowEntry(e)
		if err != nil {
			return false
		}
		for _, d := range m.Floor.DenyEgress {
			de, _ := egress.ParseAllowEntry(d)
			if entriesOverlap(a, de) {
				return true
			}
		}
		return false
	}
	dir := t.TempDir()
	for i := range 300 {
		global := filepath.Join(dir, fmt.Sprintf("g%d.toml", i))
		trusted := filepath.Join(dir, fmt.Sprintf("t%d.toml", i))
		os.WriteFile(global, []byte(layer()), 0o600)
		os.WriteFile(trusted, []byte(layer()), 0o600)
		req := request(newProject(t, []byte(layer())), global)
		req.TrustedPath = trusted
		req.Managed = m
		if r.IntN(2) == 0 {
			req.Flags.Network = ptr(Network(pick(NetworkOrder...)))
		}
		res, _ := Load(req)
		c := res.Config
		if rank(NetworkOrder, c.Network) < rank(NetworkOrder, m.Floor.MaxNetwork) {
			t.Fatalf("case %d: network %s above the floor", i, *c.Network)
		}
		if val(c.Profile) != ProfileStrict || c.GitShadow == nil || !*c.GitShadow {
			t.Fatalf("case %d: forced keys lowered: profile %v git_shadow %v", i, val(c.Profile), c.GitShadow)
		}
		for _, e := range c.Egress {
			if denied(e) {
				t.Fatalf("case %d: denied entry %q in force", i, e)
			}
		}
		if _, ok := c.Credentials["openai"]; ok {
			t.Fatalf("case %d: a denied credential is brokered", i)
		}
		for _, q := range res.Requests {
			if q.Pending || q.Status == RequestPending {
				t.Fatalf("case %d: repository request %v pending under repo_requests = false", i, q)
			}
		}
		// Approvals and live allows: the one grant check, and the
		// approval's scope and duration.
		e := pick(entries...)
		if v := CheckGrant("egress", e, GrantContext{Managed: m}); v.Risk != RiskRefused && denied(e) {
			t.Fatalf("grant of denied %q: %v", e, v)
		}
		d := time.Duration(r.IntN(48)) * time.Hour
		scope := pick("always", "session", "once", "for")
		if err := m.CheckApproval(scope, d); err == nil && (scope == "always" || scope == "for" && d > 8*time.Hour) {
			t.Fatalf("approval %s %s accepted", scope, d)
		}
		added := time.Unix(1e9, 0)
		var exp time.Time
		if r.IntN(2) == 0 {
			exp = added.Add(d)
		}
		if got := m.ApprovalExpiry(added, exp); got.IsZero() || got.Sub(added) > 8*time.Hour {
			t.Fatalf("approval expiry %v beyond max_approval", got)
		}
	}
}

func TestManagedViolationsNameThePolicy(t *testing.T) {
	m := mustManaged(t, testManaged)
	dir := t.TempDir()
	global := filepath.Join(dir, "config.toml")
	os.WriteFile(global, []byte("network = \"full\"\negress = [\"build.corp.example\"]\n"), 0o600)
	req := request(newProject(t, []byte("egress = [\"example.org\"]\n")), global)
	req.Managed = m
	res, err := Load(req)
	for _, want := range []string{
		`network = "full": the organisation's policy (/etc/corral/managed.toml) allows at most network = "broker"`,
		`egress = "build.corp.example": the organisation's policy (/etc/corral/managed.toml) never allows *.corp.example`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v\nwant %q", err, want)
		}
	}
	if q := res.RefusedRequests(); len(q) != 1 || !strings.Contains(q[0].Why, "lets no repository request anything") {
		t.Errorf("refused requests %+v", q)
	}
}

// FuzzManagedSources: any managed file or plist either is refused or
// yields a floor whose every value validates (and CheckGrant never panics
// under it).
func FuzzManagedSources(f *testing.F) {
	f.Add([]byte(testManaged), false)
	f.Add([]byte(testPlist), true)
	f.Add([]byte("<plist><dict><key>audit</key><dict><key>forward</key><string>http://[::1]:1/x</string></dict></dict></plist>"), true)
	f.Fuzz(func(t *testing.T, data []byte, plist bool) {
		var m *Managed
		var err error
		if plist {
			m, err = ParseManagedPlist("prefs", data)
		} else {
			m, err = ParseManaged("m.toml", data)
		}
		if err != nil {
			return
		}
		if errs := m.validate(nil); len(errs) > 0 {
			t.Fatalf("accepted a floor that does not validate: %v", errs)
		}
		CheckGrant("egress", "api.example.test", GrantContext{Managed: m})
		_ = m.CheckApproval("always", time.Hour)
	})
}

// TestManagedFileAccess: a file in a directory the user cannot search is
// no policy; a file there but unreadable is in force as an error.
func TestManagedFileAccess(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads every file")
	}
	dir := t.TempDir()
	hidden := filepath.Join(dir, "hidden")
	os.Mkdir(hidden, 0o700)
	os.WriteFile(filepath.Join(hidden, "managed.toml"), []byte(testManaged), 0o644)
	os.Chmod(hidden, 0o600) // not searchable
	defer os.Chmod(hidden, 0o700)
	if m, err := LoadManaged(filepath.Join(hidden, "managed.toml")); m != nil || err != nil {
		t.Errorf("unsearchable directory: %v %v", m, err)
	}
	unreadable := filepath.Join(dir, "managed.toml")
	os.WriteFile(unreadable, []byte(testManaged), 0o000)
	if _, err := LoadManaged(unreadable); err == nil {
		t.Error("an unreadable policy file is no policy")
	}
}
