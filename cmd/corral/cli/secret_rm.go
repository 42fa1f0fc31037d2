package cli

import (
	"fmt"

	"github.com/corral-dev/corral/core/secret"
	"github.com/spf13/cobra"
)

// SecretRmOptions are the options of `corral secret rm`.
type SecretRmOptions struct {
	IO    *IOStreams
	Store func() (secret.Store, error)
	Ref   SecretRef
}

// NewCmdSecretRm builds `corral secret rm`.
func NewCmdSecretRm(f *Factory, runF func(*SecretRmOptions) error) *cobra.Command {
	opts := &SecretRmOptions{IO: f.IO, Store: func() (secret.Store, error) { return secretStore(f) }}
	cmd := &cobra.Command{
		Use:     "rm --service S --account A",
		Short:   "Delete a secret from the OS keychain",
		Long:    "Rm deletes the secret. A missing secret exits 1.",
		Example: "  corral secret rm --service corral-git --account github.com",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Ref.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return secretRmRun(opts)
		},
	}
	addSecretRefFlags(cmd, &opts.Ref)
	return cmd
}

func secretRmRun(opts *SecretRmOptions) error {
	store, err := opts.Store()
	if err != nil {
		return err
	}
	ctx, cancel := secretContext()
	defer cancel()
	if err := store.Delete(ctx, opts.Ref.Service, opts.Ref.Account); err != nil {
		return err
	}
	if opts.IO.OutTTY {
		fmt.Fprintf(opts.IO.Out, "deleted secret: service %q account %q\n", opts.Ref.Service, opts.Ref.Account)
	}
	return nil
}
