package cli

import (
	"context"
	"errors"
	"time"

	"github.com/corral-dev/corral/core/secret"
	"github.com/spf13/cobra"
)

// secretTimeout bounds one secret command. It is long on purpose: the
// keychain may show an unlock or "allow access" dialog and wait for the
// user (see core/secret).
const secretTimeout = 2 * time.Minute

// SecretRef is the --service and --account flags shared by the secret
// subcommands.
type SecretRef struct {
	Service, Account string
}

// NewCmdSecret builds `corral secret` and its subcommands.
func NewCmdSecret(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "secret <command>",
		Short: "Store, read and delete secrets in the OS keychain",
		Long: `Secrets live in the OS keychain (the login keychain on macOS, the Secret
Service on Linux), addressed by a service and an account. Config names them
in keychain_env, and git tokens use service "corral-git" with the host as
the account; corral reads them when a session starts.`,
		Example: `  corral secret set corral-git github.com
  corral secret rm corral-git github.com`,
	}
	cmd.AddCommand(
		NewCmdSecretSet(f, nil),
		NewCmdSecretGet(f, nil),
		NewCmdSecretRm(f, nil),
	)
	return cmd
}

func addSecretRefFlags(cmd *cobra.Command, ref *SecretRef) {
	cmd.Flags().StringVar(&ref.Service, "service", "", "keychain `service` (required)")
	cmd.Flags().StringVar(&ref.Account, "account", "", "keychain `account` (required)")
	_ = cmd.MarkFlagRequired("service")
	_ = cmd.MarkFlagRequired("account")
}

func (r SecretRef) validate() error {
	if r.Service == "" || r.Account == "" {
		return errors.New("--service and --account must not be empty")
	}
	return nil
}

// secretStore returns the factory's store.
func secretStore(f *Factory) (secret.Store, error) {
	if f.SecretStore == nil {
		return nil, errors.New("no secret store configured")
	}
	return f.SecretStore(), nil
}

func secretContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), secretTimeout)
}
