package config

import (
	"strings"
	"testing"
)

func TestCredentialValidation(t *testing.T) {
	for _, tc := range []struct {
		toml string
		want []string // "" = valid
	}{
		{`[credentials.anthropic]
upstream = "https://api.example.test"
header = "x-api-key"
keychain = { service = "anthropic", account = "work" }`, nil},
		{`[credentials.github]
upstream = "https://git.example.test"
header = "basic"
env_from_host = "GH_TOKEN"
ca = "/etc/ssl/private-ca.pem"`, nil},
		{`[credentials.gemini]
upstream = "https://gemini.example.test"
header = "x-goog-api-key"
env_from_host = "GEMINI_KEY"`, nil},
		{`[credentials.Bad]
upstream = "http://x.test"
header = "cookie"`, []string{"credentials.Bad: not a credential name", "credentials.Bad.upstream", "credentials.Bad.header", "credentials.Bad: no secret source"}},
		{`[credentials.a]
upstream = "https://u:p@x.test/?q=1"
header = "authorization"
env_from_host = "A"
keychain = { service = "s", account = "a" }
ca = "rel.pem"`, []string{"credentials.a.upstream", "both keychain and env_from_host", "credentials.a.ca"}},
	} {
		l, err := Parse(KindGlobal, "g.toml", []byte(tc.toml))
		if err != nil {
			t.Fatal(err)
		}
		errs := validate(l)
		msg := ""
		for _, e := range errs {
			msg += e.Error() + "\n"
		}
		if tc.want == nil && len(errs) > 0 {
			t.Errorf("%s\nrefused: %s", tc.toml, msg)
		}
		for _, w := range tc.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s\nerrors lack %q:\n%s", tc.toml, w, msg)
			}
		}
	}
}
