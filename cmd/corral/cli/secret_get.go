package cli

import (
	"fmt"

	"github.com/corral-dev/corral/core/secret"
	"github.com/spf13/cobra"
)

// SecretGetOptions are the options of `corral secret get`.
type SecretGetOptions struct {
	IO    *IOStreams
	Store func() (secret.Store, error)
	Ref   SecretRef
}

// NewCmdSecretGet builds `corral secret get`.
func NewCmdSecretGet(f *Factory, runF func(*SecretGetOptions) error) *cobra.Command {
	opts := &SecretGetOptions{IO: f.IO, Store: func() (secret.Store, error) { return secretStore(f) }}
	cmd := &cobra.Command{
		Use:   "get --service S --account A",
		Short: "Print a secret from the OS keychain",
		Long: `Get prints the secret's value: with a newline on a terminal, exactly the
stored bytes otherwise. A missing secret exits 1.`,
		Example: "  corral secret get --service anthropic --account default",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Ref.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return secretGetRun(opts)
		},
	}
	addSecretRefFlags(cmd, &opts.Ref)
	return cmd
}

func secretGetRun(opts *SecretGetOptions) error {
	store, err := opts.Store()
	if err != nil {
		return err
	}
	ctx, cancel := secretContext()
	defer cancel()
	v, err := store.Get(ctx, opts.Ref.Service, opts.Ref.Account)
	if err != nil {
		return err
	}
	if opts.IO.OutTTY {
		v += "\n"
	}
	_, err = fmt.Fprint(opts.IO.Out, v)
	return err
}
