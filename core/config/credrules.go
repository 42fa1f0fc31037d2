package config

import (
	"slices"
	"strconv"

	"github.com/corral-dev/corral/core/egress"
)

// Rules are the credential's rules as the broker applies them, or nil
// when it has none. header = "basic" (the git hosts' header) declares the
// credential a git host's: only then does read_only admit git's fetch.
func (cr Credential) Rules() *egress.CredentialRules {
	r := &egress.CredentialRules{Methods: slices.Clone(cr.Methods), Paths: slices.Clone(cr.Paths), ReadOnly: cr.ReadOnly,
		Git: CredentialHeader(cr.Header) == HeaderBasic}
	if r.IsZero() {
		return nil
	}
	return r
}

// checkCredentialRules checks methods and paths of a [credentials.NAME]
// table, each by its key; core/egress (CredentialRules.Validate) is the
// one rule, and the broker checks again when it starts.
func checkCredentialRules(key string, cr Credential, bad func(key, value, reason, fix string)) {
	for i, m := range cr.Methods {
		if err := (&egress.CredentialRules{Methods: []string{m}}).Validate(); err != nil {
			bad(key+".methods", strconv.Quote(m), err.Error(), "use one of "+quoteList(egress.RuleMethods))
		} else if slices.Contains(cr.Methods[:i], m) {
			bad(key+".methods", strconv.Quote(m), "listed twice", "")
		}
	}
	for i, p := range cr.Paths {
		if err := egress.CheckRulePath(p); err != nil {
			bad(key+".paths", strconv.Quote(p), err.Error(), `write a decoded, clean prefix such as "/org/repo"`)
		} else if slices.Contains(cr.Paths[:i], p) {
			bad(key+".paths", strconv.Quote(p), "listed twice", "")
		}
	}
	if err := cr.Rules().Validate(); err != nil && len(cr.Paths) > egress.MaxRulePaths {
		bad(key+".paths", "", err.Error(), "")
	}
}
