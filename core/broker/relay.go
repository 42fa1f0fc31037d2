package broker

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/credential"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/secret"
)

// LaptopRelay starts this machine's credential relay for one session it
// runs on a remote host (docs/REMOTE.md, "Secrets"): the credentials this
// machine's config for the project (cfg, box boxName: core/box
// RelayConfig) names and this machine can
// read (its keychain, its environment), served on a private socket that
// the session's ssh forwards. Each use and refusal is counted in this
// machine's audit log as the broker counts its own (credential-use,
// credential-refused). It returns nil and a no-op stop when there is
// nothing to relay; stop ends the relay and writes the counts.
func LaptopRelay(l paths.Layout, cfg config.Settings, boxName string, store secret.Store, getenv func(string) (string, bool), logger *slog.Logger) (*credential.Relay, func(), error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	alog, err := audit.Open(l.AuditLog())
	if err != nil {
		return nil, func() {}, fmt.Errorf("the credential relay: %w", err)
	}
	counts := newCredAudit(nil, alog.Record, boxName, logger)
	counts.start(credFlushInterval)
	if store != nil {
		// As the broker's: no dialog while a remote session waits; the
		// terminal settles each item first (secret.Decide, before ssh).
		store = secret.NewShared(secret.Silent(store))
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	r, err := credential.StartRelay(l.RunDir(), "relay-"+hex.EncodeToString(rnd[:]), cfg, credential.HolderConfig{
		Store: store, Getenv: getenv, Logger: logger,
		Egress: egress.CredentialConfig{Log: counts, Logger: logger},
	})
	stop := func() {
		_ = r.Close()
		counts.Close()
		alog.Close()
	}
	if err != nil || r == nil {
		stop()
		return nil, func() {}, err
	}
	return r, stop, nil
}
