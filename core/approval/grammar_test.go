package approval

import (
	"testing"

	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/egress"
)

// FuzzOneGrammar: every place that reads an egress entry reads it the same
// way. Whatever s is, the config's check (config.CheckEgressEntry), the
// grant check (config.CheckGrant), the policy (egress.ParsePolicy) and the
// allow-list a broker builds from a trusted layer (AllowList, Entries,
// egress.NewPolicy) accept it or refuse it together, and where accepted
// they agree on its canonical form; an approval (Canonical) takes exactly
// the accepted entries that are not ranges, in the same form.
func FuzzOneGrammar(f *testing.F) {
	for _, s := range []string{"api.example.test", " 10.1.2.0/24 ", "*.example.test:*", "EXAMPLE.test.:8443", "bücher.example",
		"x_y.example.test", "a_b", "10.0.0.1", "fe80::1%eth0/64", "::ffff:10.0.0.1/128", "*.test", "a..b", "127.1", "host:0",
		"https://a.example.test/", "*", "[::1]:443", "xn--bcher-kva.example", "0x1.example"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cfgErr := config.CheckEgressEntry(s)
		pol, polErr := egress.ParsePolicy([]string{s}, nil)
		if (cfgErr == nil) != (polErr == nil) {
			t.Fatalf("%q: config says %v, the policy says %v", s, cfgErr, polErr)
		}
		v := config.CheckGrant("egress", s, config.GrantContext{})
		appr, apprErr := Canonical(s)
		if cfgErr != nil {
			if v.Risk != config.RiskRefused {
				t.Fatalf("%q: config refuses it (%v), the grant check does not", s, cfgErr)
			}
			if apprErr == nil {
				t.Fatalf("%q: config refuses it (%v), an approval takes it", s, cfgErr)
			}
			return
		}
		e, err := egress.ParseAllowEntry(s)
		if err != nil {
			t.Fatalf("%q: config takes it, ParseAllowEntry does not: %v", s, err)
		}
		canon := e.String()
		if v.Entry != canon {
			t.Fatalf("%q: the grant check's form %q, the grammar's %q", s, v.Entry, canon)
		}
		want := canon
		if e.IsRange() {
			want = "range " + canon
		}
		if pol.String() != want {
			t.Fatalf("%q: the policy is %q, want %q", s, pol.String(), want)
		}
		if (apprErr == nil) != !e.IsRange() || apprErr == nil && appr != canon {
			t.Fatalf("%q (%q): approval %q, %v", s, canon, appr, apprErr)
		}
		// The broker's path: a trusted layer's entry, unless the grant
		// check refuses it, is in the policy in the same form.
		res := noAgent()
		res.Layers = []config.Layer{{Path: "trusted.toml", Config: config.Config{Egress: []string{s}}}}
		rules, err := AllowList(res, Toolchains{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		built := egress.NewPolicy(Entries(rules))
		switch {
		case v.Risk == config.RiskRefused:
			if built.String() != "" {
				t.Fatalf("%q: refused by the grant check, in force as %q", s, built.String())
			}
		case built.String() != want:
			t.Fatalf("%q: the broker's policy is %q, want %q", s, built.String(), want)
		}
	})
}

// noAgent is a loaded config whose agent (shell) adds no hosts, so that a
// policy holds only what a test puts in it.
func noAgent() config.Result {
	shell := "shell"
	return config.Result{Effective: config.Effective{Config: config.Config{Agent: &shell}}}
}
