package cli

import (
	"io"
	"log/slog"
	"os"

	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/remote"
	"github.com/corral-dev/corral/core/secret"
)

// Factory holds what commands need from the outside world, so tests can
// replace it. It is built once in Main.
type Factory struct {
	IO       *IOStreams
	Layout   func() (paths.Layout, error)
	Platform config.Platform // zero: the host's
	Logger   *slog.Logger
	// Executable is the path of the running corral binary (for brokers,
	// terminals and the qemu wrapper).
	Executable func() (string, error)
	// NewService builds the lifecycle service; nil means box.NewService
	// over Layout and Executable. Tests inject one with a fake limactl.
	// Commands call Service.
	NewService func() (*box.Service, error)
	// LookupEnv reads the host environment (sessions forward from it): a
	// variable that is exported but empty is set, as core/launchenv's
	// env_from_host rule says. nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// SecretStore opens the OS keychain (secret.Default); tests use secret.Memory.
	SecretStore func() secret.Store
	// Dir is the -C flag: the project directory.
	Dir string
	// Host is the --host flag: the remote host a box command runs on
	// ("" = the project's host key; "local" = this machine).
	Host string
	// Remote runs commands on a remote host; its zero value runs the
	// system ssh client.
	Remote remote.Runner
	// remoteHost is the host a command that needs both machines (pull)
	// works with, set by forwardRemote; nil: this machine only.
	remoteHost *remote.Host
	// RelaySocket and RelayToken are the hidden --credential-relay flags:
	// a laptop that started this command over ssh forwards its credential
	// relay to RelaySocket (core/remote).
	RelaySocket, RelayToken string
	// args are the arguments Run was given, which a forwarded command
	// hands to the remote corral (without --host).
	args []string
	// App runs the menu-bar app; main injects it so the CLI package never
	// imports the GUI libraries.
	App AppFunc
	// Verbose is the --verbose flag.
	Verbose bool
	// service is the one Service built for this command (Service).
	service *box.Service
	// Geteuid is the effective user id (the sweep never runs as root); nil
	// means os.Geteuid. Tests, which may run as root in containers, set it.
	Geteuid func() int
}

// geteuid is f.Geteuid, or os.Geteuid when unset.
func (f *Factory) geteuid() int {
	if f.Geteuid != nil {
		return f.Geteuid()
	}
	return os.Geteuid()
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// lookupEnv is f.LookupEnv, or os.LookupEnv when unset.
func (f *Factory) lookupEnv(name string) (string, bool) {
	if f.LookupEnv != nil {
		return f.LookupEnv(name)
	}
	return os.LookupEnv(name)
}
