package config

import (
	"strings"
	"testing"
)

func TestUpstreamProxyValues(t *testing.T) {
	for _, tc := range []struct{ toml, want string }{
		{`upstream_proxy = { url = "http://proxy.example.test:3128" }`, ""},
		{`upstream_proxy = { url = "socks5://127.0.0.1:1080", keychain = { service = "corp-proxy", account = "alice" }, no_proxy = ["intranet.example.test", "*.corp.example.test", "10.0.0.0/8"] }`, ""},
		{`upstream_proxy = { url = "http://alice:pw@proxy.example.test:3128" }`, "credentials may not be in the URL"},
		{`upstream_proxy = { url = "https://proxy.example.test:3128" }`, `the scheme must be "http" or "socks5"`},
		{`upstream_proxy = { url = "http://proxy.example.test" }`, "the host and port must be given"},
		{`upstream_proxy = { no_proxy = ["x.example.test"] }`, "upstream_proxy.url"},
		{`upstream_proxy = { url = "http://p.example.test:3128", keychain = { service = "corp-proxy" } }`, "needs both service and account"},
		{`upstream_proxy = { url = "http://p.example.test:3128", no_proxy = ["*"] }`, "upstream_proxy.no_proxy"},
		{`upstream_proxy = { url = "http://p.example.test:3128", password = "x" }`, "unknown key"},
	} {
		l, err := Parse(KindGlobal, "g.toml", []byte(tc.toml+"\n"))
		msg := ""
		if err != nil {
			msg = err.Error()
		} else {
			for _, e := range validate(l) {
				msg += e.Error() + "\n"
			}
		}
		if (tc.want == "") != (msg == "") || !strings.Contains(msg, tc.want) {
			t.Errorf("%s: errors %q, want %q", tc.toml, msg, tc.want)
		}
	}
}

// A repository's .corral.toml can never set or change the upstream
// proxy: not to another proxy, not to the value the user's own layers
// already give, not by its no_proxy list alone, whatever the trusted
// layer says.
func TestRepositoryNeverSetsUpstreamProxy(t *testing.T) {
	userValue := `upstream_proxy = { url = "http://proxy.example.test:3128" }`
	user, err := Parse(KindGlobal, "/g.toml", []byte(userValue+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	trusted, err := Parse(KindTrusted, "/t.toml", []byte(userValue+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, repo := range []string{
		`upstream_proxy = { url = "http://evil.example.test:3128" }`,
		userValue,
		`upstream_proxy = { url = "http://proxy.example.test:3128", no_proxy = ["*.evil.example.test"] }`,
	} {
		proj, err := Parse(KindProject, "/p/.corral.toml", []byte(repo+"\n"))
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range []PolicyInput{
			{ProjectDir: "/p", TrustedPath: "/t.toml", HostCPUs: 8},
			{ProjectDir: "/p", TrustedPath: "/t.toml", HostCPUs: 8, Trusted: &trusted},
		} {
			errs, _ := checkProject(proj, user.Config, in)
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), "upstream_proxy") || !strings.Contains(errs[0].Error(), "may never set the upstream proxy") {
				t.Errorf("repository %s (trusted layer %v): %v", repo, in.Trusted != nil, errs)
			}
		}
	}
}
