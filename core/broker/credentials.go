package broker

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"

	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/credential"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/funnel"
	"github.com/corral-dev/corral/core/secret"
)

// boxCredentials plans the box's credentials, once, from the config loaded
// at start (core/credential: the broker is the plan's single owner; its
// sessions ask it over the control socket what it serves). Credentials
// are fixed for the broker's lifetime, except that one the broker could
// not read itself starts when a session supplies it: a changed
// [credentials] table takes effect when the box restarts. Host variables
// are read from the broker's own environment (Options.Getenv), keychain
// items when a request needs them. Where the host funnel exists the
// routes answer only its connections. A credential the broker cannot read
// becomes relayed when a session brings the laptop's relay
// (credential.Holder.AnswerRelayed).
func boxCredentials(o Options, bp *boxPolicy, m boxmeta.Meta, log egress.CredentialLogger) (*credential.Holder, error) {
	bp.mu.Lock()
	cfg := bp.cfg
	bp.mu.Unlock()
	var specs []credential.Spec
	if cfg != nil {
		specs = credential.Plan(cfg.Settings())
	}
	store := o.Secrets
	if store == nil {
		store = secret.Default()
	}
	// The broker never raises a Keychain dialog (secret.Silent): an item
	// that needs one is refused at once, the agent told which item and
	// `corral secret set`; the dialog comes at the terminal before a
	// session starts (secret.Decide). One read per item at a time and a
	// refusal remembered briefly (secret.Shared).
	store = secret.NewShared(secret.Silent(store))
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.LookupEnv
	}
	goos := o.Platform.OS
	if goos == "" {
		goos = runtime.GOOS
	}
	h, err := credential.NewHolder(specs, credential.HolderConfig{
		Store: store, Getenv: getenv, Logger: o.Logger,
		Upstreams: o.CredentialUpstreams, RootCAs: o.CredentialRootCAs,
		// A session a laptop starts here over ssh may bring the laptop's
		// credential relay: ssh puts its socket in the run directory.
		RelayDir: o.Layout.RunDir(),
		Egress: egress.CredentialConfig{Resolver: o.Resolver, Log: log, Logger: o.Logger,
			BoundOnly: funnel.Applies(goos, m.VMType, m.Network)},
	})
	if err != nil {
		return nil, fmt.Errorf("credentials of box %s: %w", o.Box, err)
	}
	o.Logger.Info("brokered credentials", "box", o.Box, "served", h.Served(), "waiting_for", h.Wants())
	return h, nil
}

// selfAddrs are the broker as a guest reaches it: the funnel's guestfwd
// address, the slirp gateway (vz) and loopback, on the box's broker port.
// An origin-form credential request must name one of them in its Host.
func selfAddrs(port int) []string {
	p := strconv.Itoa(port)
	return []string{net.JoinHostPort(funnel.GuestAddr, p), net.JoinHostPort(funnel.BrokerGuestHost, p), net.JoinHostPort("127.0.0.1", p)}
}
