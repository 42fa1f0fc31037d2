package config

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// trustPool holds, per key, values a repository (or a user's layer) may
// write: each valid on its own, so that every problem Load reports comes
// from the trust policy or from how the layers combine.
var trustPool = map[string][]string{
	"cpus":                 {`cpus = 1`, `cpus = 4`, `cpus = 16`},
	"memory":               {`memory = "2GiB"`, `memory = "12GiB"`},
	"disk":                 {`disk = "20GiB"`, `disk = "300GiB"`},
	"image":                {`image = "https://images.example.test/noble.qcow2"`},
	"vm_type":              {`vm_type = "qemu"`},
	"mount_type":           {`mount_type = "9p"`, `mount_type = "reverse-sshfs"`},
	"network":              {`network = "full"`, `network = "learn"`, `network = "broker"`, `network = "offline"`},
	"source":               {`source = "mount"`, `source = "clone"`},
	"readonly_project":     {`readonly_project = true`, `readonly_project = false`},
	"git_shadow":           {`git_shadow = true`, `git_shadow = false`},
	"agent_state":          {`agent_state = "shared"`, `agent_state = "seeded"`, `agent_state = "isolated"`},
	"profile":              {`profile = "default"`, `profile = "strict"`},
	"agent_credentials":    {`agent_credentials = "forwarded"`, `agent_credentials = "brokered"`},
	"sudo":                 {`sudo = true`, `sudo = false`},
	"learn_for":            {`learn_for = "1h"`},
	"hold_denied":          {`hold_denied = "30s"`},
	"low_host_ports":       {`low_host_ports = true`},
	"forward_env":          {`forward_env = ["FOO_HOME"]`, `forward_env = ["BAR"]`},
	"git_tokens":           {`git_tokens = ["github.com"]`},
	"idle_action":          {`idle_action = "save"`},
	"save_when_free_below": {`save_when_free_below = "2GiB"`},
	"claude_install":       {`claude_install = "npm"`},
	"agent":                {`agent = "codex"`, `agent = "shell"`},
	"terminal":             {`terminal = "xterm"`},
	"project_roots":        {`project_roots = ["~/src"]`},
	"hide":                 {`hide = [".env"]`, `hide = ["link-out/x"]`},
	"egress":               {`egress = ["api.example.test"]`, `egress = ["*.com"]`, `egress = ["localhost:*", "0.0.0.0/0"]`},
	"egress_groups":        {`egress_groups = ["code-hosts"]`},
	"ports":                {`ports = ["3000"]`, `ports = ["80"]`},
	"toolchains":           {`toolchains = ["go"]`},
	"packages":             {`packages = ["jq"]`},
	"env":                  {"[env]\nNODE_ENV = \"x\"", "[env]\nAPI_TOKEN = \"t\"\nHTTP_PROXY = \"http://p.example.test\"", "[env]\nFOO_HOME = \"y\""},
	"env_from_host":        {"[env_from_host]\nGH = \"HOST_GH\""},
	"keychain_env":         {"[keychain_env.K]\nservice = \"s\"\naccount = \"a\""},
	"mounts":               {"[[mounts]]\nlocation = \"~/data\"\nmount_point = \"/data\""},
}

// randomLayer writes a TOML file of n keys drawn from keys.
func randomLayer(r *rand.Rand, keys []string, n int) string {
	pick := slices.Clone(keys)
	r.Shuffle(len(pick), func(i, j int) { pick[i], pick[j] = pick[j], pick[i] })
	pick = pick[:min(n, len(pick))]
	var scalars, tables []string
	for _, k := range pick {
		v := trustPool[k][r.IntN(len(trustPool[k]))]
		if strings.HasPrefix(v, "[") {
			tables = append(tables, v)
		} else {
			scalars = append(scalars, v)
		}
	}
	return strings.Join(append(scalars, tables...), "\n") + "\n"
}

// applyFix follows a printed fix: the lines parse as TOML, and each key
// they set takes that value in the trusted layer (the fix says "add" or
// "replace KEY with").
func applyFix(t *testing.T, trusted *Config, v *Violation) {
	t.Helper()
	fix, err := Parse(KindTrusted, "fix", []byte(v.Lines))
	if err != nil {
		t.Fatalf("the printed lines do not parse: %v\n%s", err, v.Lines)
	}
	if len(fix.Set) == 0 {
		t.Fatalf("the printed lines set nothing:\n%s", v.Lines)
	}
	for _, k := range fix.Set {
		field(trusted, k).Set(field(&fix.Config, k))
	}
}

// TestTrustFixMakesTheCheckPass is issue 37's property: for any
// repository file (and any global and trusted layer), copying every
// printed fix into the trusted layer gives a check that passes, except
// for what the check said can never be granted (a path out of the project,
// a value the strict profile refuses, a request the grant check refuses).
func TestTrustFixMakesTheCheckPass(t *testing.T) {
	keys := SortedKeys(trustPool)
	var userKeys []string // what a user's layer sets here: no requests
	for _, k := range keys {
		if !slices.Contains(RequestKeys, k) && k != "hide" {
			userKeys = append(userKeys, k)
		}
	}
	seed := uint64(37)
	r := rand.New(rand.NewPCG(seed, 1))
	for i := range 400 {
		repoText := randomLayer(r, keys, 1+r.IntN(8))
		globalText := randomLayer(r, userKeys, r.IntN(4))
		trustedText := randomLayer(r, userKeys, r.IntN(4))
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			checkFixProperty(t, repoText, globalText, trustedText, false)
		})
		if t.Failed() {
			t.Logf("repository:\n%s\nglobal:\n%s\ntrusted:\n%s", repoText, globalText, trustedText)
			return
		}
	}
}

// checkFixProperty loads the three layers, follows every printed fix and
// loads again. anyFile: the repository file is arbitrary, and one with a
// problem that is not the trust check's (a value that does not validate,
// a file that does not parse) says nothing about the property.
func checkFixProperty(t *testing.T, repoText, globalText, trustedText string, anyFile bool) {
	proj := newProject(t, []byte(repoText))
	home := t.TempDir()
	req := request(proj, filepath.Join(home, "config.toml"))
	req.TrustedPath = filepath.Join(home, "trusted.toml")
	write := func(path, text string) {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(req.GlobalPath, globalText)
	write(req.TrustedPath, trustedText)

	// The user's layers alone must load, or the case says nothing.
	alone := req
	alone.ProjectDir = ""
	if _, err := Load(alone); err != nil {
		t.Skipf("the user's layers have problems of their own: %v", err)
	}
	res, err := Load(req)
	repoFile := filepath.Join(proj, ProjectFile)
	trusted, terr := LoadFile(KindTrusted, req.TrustedPath)
	if terr != nil {
		t.Fatal(terr)
	}
	never := map[string]bool{}
	for _, e := range violations(err) {
		var v *Violation
		if anyFile && (!errors.As(e, &v) || v.Lines == "" && !v.Never) {
			t.Skipf("not a trust problem: %v", e)
		}
		if !errors.As(e, &v) || v.File != repoFile && !v.Never {
			t.Fatalf("a problem the repository file did not cause: %v", e)
		}
		switch {
		case v.Never:
			if v.Lines != "" || v.Fix == "" {
				t.Errorf("a never-grantable problem with lines to copy, or no fix: %+v", v)
			}
			never[v.Key+"="+v.Value] = true
		case v.Lines == "":
			t.Errorf("a repository problem with neither lines to copy nor a never verdict: %v", v)
		default:
			if !strings.Contains(v.Fix, req.TrustedPath) || !strings.HasSuffix(v.Fix, v.Lines) {
				t.Errorf("the fix does not name the trusted layer and end with its lines: %q", v.Fix)
			}
			applyFix(t, &trusted.Config, v)
		}
	}
	for _, q := range res.Requests {
		if q.Status == RequestRefused {
			if q.Why == "" {
				t.Errorf("a refused request without a reason: %+v", q)
			}
			continue
		}
	}
	write(req.TrustedPath, Effective{Config: trusted.Config}.TOML(false))
	again, err := Load(req)
	for _, e := range violations(err) {
		var v *Violation
		if errors.As(e, &v) && v.Never && never[v.Key+"="+v.Value] {
			continue
		}
		data, _ := os.ReadFile(req.TrustedPath)
		t.Errorf("after every printed fix was followed, the check still fails: %v\ntrusted layer now:\n%s", e, data)
	}
	// Requests: a refused one stays refused, with its reason; none is pending
	// that the first load called refused.
	refused := func(rs []RepoRequest) []string {
		var out []string
		for _, q := range rs {
			if q.Status == RequestRefused {
				out = append(out, q.Key+"="+q.Entry)
			}
		}
		sort.Strings(out)
		return out
	}
	if !slices.Equal(refused(res.Requests), refused(again.Requests)) {
		t.Errorf("refused requests changed: %v, then %v", refused(res.Requests), refused(again.Requests))
	}
}

// violations splits a joined error.
func violations(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, violations(e)...)
		}
		return out
	}
	if err == nil {
		return nil
	}
	return []error{err}
}

// TestTrustFixWording: a fix adds to a trusted layer that does not set the
// key, replaces what one sets, and says to stay above its first table.
func TestTrustFixWording(t *testing.T) {
	for _, tc := range []struct{ trusted, repo, want string }{
		{"", `network = "full"`, "add to TRUSTED:\nnetwork = \"full\""},
		{"[env]\nA = \"1\"", `sudo = true`, "add to TRUSTED, above its first [table]:\nsudo = true"},
		{`forward_env = ["A"]`, `forward_env = ["B"]`, "replace forward_env in TRUSTED with:\nforward_env = [\"A\", \"B\"]"},
		{"[env]\nA = \"1\"", "[env]\nAPI_TOKEN = \"x\"", "replace its [env] table in TRUSTED with:\n[env]\nA = \"1\"\nAPI_TOKEN = \"x\""},
	} {
		proj := newProject(t, []byte(tc.repo))
		home := t.TempDir()
		req := request(proj, filepath.Join(home, "config.toml"))
		req.TrustedPath = filepath.Join(home, "trusted.toml")
		if err := os.WriteFile(req.TrustedPath, []byte(tc.trusted), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Load(req)
		var v *Violation
		if !errors.As(err, &v) {
			t.Fatalf("%s: no violation: %v", tc.repo, err)
		}
		if got := strings.ReplaceAll(v.Fix, req.TrustedPath, "TRUSTED"); got != "if you trust this repository, "+tc.want {
			t.Errorf("%s over %q:\ngot  %q\nwant %q", tc.repo, tc.trusted, got, "if you trust this repository, "+tc.want)
		}
	}
}

// FuzzTrustFix is TestTrustFixMakesTheCheckPass for any repository file:
// the fuzzer writes the file, and picks the user's global and trusted
// layers from the pool.
func FuzzTrustFix(f *testing.F) {
	for _, s := range []string{
		"network = \"full\"\nsudo = true\n", "[env]\nAPI_TOKEN = \"x\"\n", "profile = \"strict\"\nsudo = true\n",
		"forward_env = [\"A\"]\n[env]\nA = \"1\"\n", "cpus = 64\nmemory = \"64GiB\"\n", "egress = [\"*.com\"]\nports = [\"80\"]\n",
		"[[mounts]]\nlocation = \"~/x\"\nmount_point = \"/x\"\n", "agent_state = \"shared\"\n",
	} {
		f.Add(s, uint64(1))
		f.Add(s, uint64(37))
	}
	var userKeys []string
	for _, k := range SortedKeys(trustPool) {
		if !slices.Contains(RequestKeys, k) && k != "hide" {
			userKeys = append(userKeys, k)
		}
	}
	f.Fuzz(func(t *testing.T, repo string, seed uint64) {
		r := rand.New(rand.NewPCG(seed, 2))
		checkFixProperty(t, repo, randomLayer(r, userKeys, r.IntN(4)), randomLayer(r, userKeys, r.IntN(4)), true)
	})
}

// TestShadowedByTheTrustedLayer: a replaced key or a table entry the
// trusted layer sets is in force whatever the repository says, so the
// repository's value is no violation (it changes nothing); a list entry
// is not shadowed (lists are unions).
func TestShadowedByTheTrustedLayer(t *testing.T) {
	for _, tc := range []struct {
		trusted, repo string
		ok            bool
	}{
		{`network = "offline"`, `network = "full"`, true},
		{`network = "offline"`, `network = "broker"`, true},
		{`sudo = false`, `sudo = true`, true},
		{`cpus = 2`, `cpus = 64`, true},
		{"[env]\nAPI_TOKEN = \"mine\"", "[env]\nAPI_TOKEN = \"theirs\"", true},
		{"[env_from_host]\nGH = \"MINE\"", "[env_from_host]\nGH = \"THEIRS\"", true},
		{"[env_from_host]\nGH = \"MINE\"", "[env_from_host]\nOTHER = \"THEIRS\"", false},
		{`forward_env = ["A"]`, `forward_env = ["B"]`, false},
		{`profile = "default"`, "profile = \"strict\"\nsudo = true", false},
	} {
		proj := newProject(t, []byte(tc.repo))
		home := t.TempDir()
		req := request(proj, filepath.Join(home, "config.toml"))
		req.TrustedPath = filepath.Join(home, "trusted.toml")
		if err := os.WriteFile(req.TrustedPath, []byte(tc.trusted), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(req); (err == nil) != tc.ok {
			t.Errorf("repository %q over trusted %q: %v, want ok=%v", tc.repo, tc.trusted, err, tc.ok)
		}
	}
}
