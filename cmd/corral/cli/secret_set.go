package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/secret"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// SecretSetOptions are the options of `corral secret set`.
type SecretSetOptions struct {
	IO    *IOStreams
	Store func() (secret.Store, error)
	Ref   SecretRef
	// ReadPassword reads a line without echo from the terminal fd;
	// term.ReadPassword unless a test replaces it.
	ReadPassword func(fd int) ([]byte, error)
}

// NewCmdSecretSet builds `corral secret set`.
func NewCmdSecretSet(f *Factory, runF func(*SecretSetOptions) error) *cobra.Command {
	opts := &SecretSetOptions{
		IO:           f.IO,
		Store:        func() (secret.Store, error) { return secretStore(f) },
		ReadPassword: term.ReadPassword,
	}
	cmd := &cobra.Command{
		Use:   "set --service S --account A",
		Short: "Store a secret in the OS keychain, read from a prompt or stdin",
		Long: `Set stores a secret under a service and an account, replacing any value
there. On a terminal it prompts without echo; otherwise it reads standard
input (one trailing newline is dropped). The value is never a flag, so it
never lands in shell history or the process list.`,
		Example: `  corral secret set --service anthropic --account default
  gh auth token | corral secret set --service corral-git --account github.com`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Ref.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return secretSetRun(opts)
		},
	}
	addSecretRefFlags(cmd, &opts.Ref)
	return cmd
}

func secretSetRun(opts *SecretSetOptions) error {
	value, err := readSecretValue(opts)
	if err != nil {
		return err
	}
	if value == "" {
		return hint.New(errors.New("refusing to store an empty secret"), `type the value at the prompt, or pipe it in: printf %s "$TOKEN" | corral secret set ...`)
	}
	store, err := opts.Store()
	if err != nil {
		return err
	}
	ctx, cancel := secretContext()
	defer cancel()
	if err := store.Set(ctx, opts.Ref.Service, opts.Ref.Account, value); err != nil {
		return err
	}
	if opts.IO.OutTTY {
		fmt.Fprintf(opts.IO.Out, "stored secret: service %q account %q\n", opts.Ref.Service, opts.Ref.Account)
	}
	return nil
}

// readSecretValue prompts without echo on a terminal, else reads stdin.
func readSecretValue(opts *SecretSetOptions) (string, error) {
	if !opts.IO.InTTY {
		b, err := io.ReadAll(opts.IO.In)
		if err != nil {
			return "", fmt.Errorf("reading the secret from stdin: %w", err)
		}
		s := string(b)
		if t, ok := strings.CutSuffix(s, "\n"); ok {
			s = strings.TrimSuffix(t, "\r")
		}
		return s, nil
	}
	fd, ok := opts.IO.In.(interface{ Fd() uintptr })
	if !ok {
		return "", errors.New("reading the secret: stdin is a terminal without a file descriptor")
	}
	fmt.Fprintf(opts.IO.ErrOut, "Value for service %q account %q (input hidden): ", opts.Ref.Service, opts.Ref.Account)
	b, err := opts.ReadPassword(int(fd.Fd()))
	fmt.Fprintln(opts.IO.ErrOut)
	if err != nil {
		return "", fmt.Errorf("reading the secret from the terminal: %w", err)
	}
	return string(b), nil
}
