package box

import (
	"slices"
	"testing"

	"github.com/corral-dev/corral/core/config"
)

// The upstream proxy's keychain item is one doctor probes (and a session
// settles for the broker): the broker reads it.
func TestKeychainRefsHoldTheUpstreamProxy(t *testing.T) {
	ref := config.SecretRef{Service: "corp-proxy", Account: "alice"}
	got := keychainRefs(config.Settings{UpstreamProxy: config.UpstreamProxy{URL: "http://127.0.0.1:3128", Keychain: &ref}})
	if !slices.Contains(got, ref) {
		t.Errorf("keychainRefs = %v, want %v among them", got, ref)
	}
	if got := keychainRefs(config.Settings{UpstreamProxy: config.UpstreamProxy{URL: "http://127.0.0.1:3128"}}); len(got) != 0 {
		t.Errorf("a proxy without credentials: %v", got)
	}
}
