package config

import (
	"strings"
	"testing"
)

// TestCredentialRulesConfig: rules decode from a trusted layer into the
// broker's rules; bad ones are reported by key; a repository can set no
// credential, so neither its rules (set or widened).
func TestCredentialRulesConfig(t *testing.T) {
	l, err := Parse(KindGlobal, "g.toml", []byte(`[credentials.git]
upstream = "https://git.example.test"
header = "basic"
env_from_host = "GH_TOKEN"
methods = ["GET", "POST"]
paths = ["/org/repo", "/org/repo.git"]
read_only = true
`))
	if err != nil {
		t.Fatal(err)
	}
	if errs := validate(l); len(errs) > 0 {
		t.Fatal(errs)
	}
	r := l.Config.Credentials["git"].Rules()
	if r == nil || !r.ReadOnly || len(r.Methods) != 2 || len(r.Paths) != 2 || r.Validate() != nil {
		t.Errorf("rules = %+v", r)
	}
	if (Credential{}).Rules() != nil {
		t.Error("a credential without rules has rules")
	}

	l, err = Parse(KindGlobal, "g.toml", []byte(`[credentials.git]
upstream = "https://git.example.test"
header = "basic"
env_from_host = "GH_TOKEN"
methods = ["get", "GET", "GET"]
paths = ["org/repo", "/org/../x", "/a%2fb", "/ok", "/ok"]
`))
	if err != nil {
		t.Fatal(err)
	}
	msg := ""
	for _, e := range validate(l) {
		msg += e.Error() + "\n"
	}
	for _, w := range []string{`credentials.git.methods = "get"`, `credentials.git.methods = "GET": listed twice`,
		`credentials.git.paths = "org/repo"`, `credentials.git.paths = "/org/../x"`, `credentials.git.paths = "/a%2fb"`, `credentials.git.paths = "/ok": listed twice`} {
		if !strings.Contains(msg, w) {
			t.Errorf("errors lack %q:\n%s", w, msg)
		}
	}

	for _, repo := range []string{
		"[credentials.git]\nread_only = false\n",
		"[credentials.git]\npaths = [\"/\"]\n",
	} {
		proj, err := Parse(KindProject, "/p/.corral.toml", []byte(repo))
		if err != nil {
			t.Fatal(err)
		}
		errs, _ := checkProject(proj, Config{}, PolicyInput{ProjectDir: "/p", TrustedPath: "/t.toml", HostCPUs: 8})
		if len(errs) == 0 || !strings.Contains(errs[0].Error(), "credentials") {
			t.Errorf("a repository set %q: %v", repo, errs)
		}
	}
}
