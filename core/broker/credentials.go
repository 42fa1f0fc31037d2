package broker

import (
	"fmt"
	"net"
	"os"
	"strconv"

	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/credential"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/funnel"
	"github.com/corral-dev/corral/core/secret"
)

// boxCredentials builds the credential broker of a box from the config
// loaded at start (core/credential decides which credentials; the
// sessions withhold the same ones). Credentials are fixed for the broker's
// lifetime: a changed [credentials] table takes effect when the box
// restarts. Host variables are read from the broker's own environment,
// which is that of the corral command that started it; keychain items are
// read when a request needs them. Nil when the box has none.
func boxCredentials(o Options, bp *boxPolicy, m box.Meta, log egress.CredentialLogger) (*egress.CredentialBroker, error) {
	bp.mu.Lock()
	cfg := bp.cfg
	bp.mu.Unlock()
	if cfg == nil {
		return nil, nil
	}
	specs := credential.Plan(cfg.Config, os.LookupEnv)
	if len(specs) == 0 {
		return nil, nil
	}
	store := o.Secrets
	if store == nil {
		store = secret.Default()
	}
	creds, err := credential.Broker(specs, store, os.LookupEnv)
	if err != nil {
		return nil, fmt.Errorf("credentials of box %s: %w", o.Box, err)
	}
	b, err := egress.NewCredentialBroker(egress.CredentialConfig{Credentials: creds, Resolver: o.Resolver, Log: log, Logger: o.Logger})
	if err != nil {
		return nil, fmt.Errorf("credentials of box %s: %w", o.Box, err)
	}
	o.Logger.Info("brokered credentials", "box", o.Box, "names", b.Names())
	return b, nil
}

// selfAddrs are the broker as a guest reaches it: the funnel's guestfwd
// address and the slirp gateway, on the box's broker port.
func selfAddrs(port int) []string {
	p := strconv.Itoa(port)
	return []string{net.JoinHostPort(funnel.GuestAddr, p), net.JoinHostPort(box.BrokerGuestHost, p)}
}
