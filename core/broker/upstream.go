package broker

import (
	"context"
	"fmt"

	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/secret"
)

// upstreamProxy is the box's upstream_proxy as the egress server takes
// it, from the config loaded at start (like the credentials, it is fixed
// for the broker's lifetime: a change applies when the box restarts); nil
// when none is set. The password is read by the broker itself from the
// keychain item the config names, when a connection first needs it,
// through a store that never raises a dialog (as for credentials): it is
// never on a command line, in the config, in a log line or in the box.
func upstreamProxy(o Options, s config.Settings) (*egress.UpstreamProxy, error) {
	up := s.UpstreamProxy
	if up.URL == "" {
		return nil, nil
	}
	scheme, addr, err := egress.ParseUpstreamProxy(up.URL)
	if err != nil {
		return nil, fmt.Errorf("upstream_proxy.url: %w", err)
	}
	noProxy, err := egress.ParseNoProxy(up.NoProxy)
	if err != nil {
		return nil, fmt.Errorf("upstream_proxy.no_proxy: %w", err)
	}
	u := &egress.UpstreamProxy{Scheme: scheme, Addr: addr, NoProxy: noProxy}
	if k := up.Keychain; k != nil {
		store := o.Secrets
		if store == nil {
			store = secret.Default()
		}
		store = secret.NewShared(secret.Silent(store))
		u.User = k.Account
		u.Password = func(ctx context.Context) (string, error) {
			v, err := store.Get(ctx, k.Service, k.Account)
			if err != nil {
				return "", fmt.Errorf("keychain item service %q account %q of upstream_proxy: %w", k.Service, k.Account, err)
			}
			return v, nil
		}
	}
	return u, nil
}
