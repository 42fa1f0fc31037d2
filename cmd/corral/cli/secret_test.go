package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/secret"
)

// runSecret runs corral with a secret.Memory store and stdin.
func runSecret(t *testing.T, store secret.Store, tty bool, stdin string, args ...string) (int, string, string) {
	t.Helper()
	io, in, out, errOut := Test(tty)
	in.WriteString(stdin)
	f := &Factory{
		IO:          io,
		LookupEnv:   func(string) (string, bool) { return "", false },
		SecretStore: func() secret.Store { return store },
	}
	code := Run(f, args)
	return code, out.String(), errOut.String()
}

func check(t *testing.T, gotCode int, gotOut, gotErr string, code int, out, errOut string) {
	t.Helper()
	if gotCode != code || gotOut != out || gotErr != errOut {
		t.Errorf("got exit %d\nstdout %q\nstderr %q\nwant exit %d\nstdout %q\nstderr %q", gotCode, gotOut, gotErr, code, out, errOut)
	}
}

func TestSecretSetStdin(t *testing.T) {
	for stdin, want := range map[string]string{
		"tok\n":     "tok",
		"tok\r\n":   "tok",
		"tok":       "tok",
		"tok\n\n":   "tok\n",
		" sp ace\n": " sp ace",
	} {
		store := &secret.Memory{}
		code, out, errOut := runSecret(t, store, false, stdin, "secret", "set", "--service", "svc", "--account", "me")
		check(t, code, out, errOut, 0, "", "")
		if v, err := store.Get(context.Background(), "svc", "me"); err != nil || v != want {
			t.Errorf("stdin %q stored %q, %v; want %q", stdin, v, err, want)
		}
	}
}

func TestSecretSetEmptyRefused(t *testing.T) {
	store := &secret.Memory{}
	code, out, errOut := runSecret(t, store, false, "\n", "secret", "set", "--service", "svc", "--account", "me")
	check(t, code, out, errOut, 1, "",
		"corral: refusing to store an empty secret\n"+
			`hint: type the value at the prompt, or pipe it in: printf %s "$TOKEN" | corral secret set ...`+"\n")
	if _, err := store.Get(context.Background(), "svc", "me"); !errors.Is(err, secret.ErrNotFound) {
		t.Errorf("something was stored: %v", err)
	}
}

func TestSecretSetNeverFromFlagOrArg(t *testing.T) {
	store := &secret.Memory{}
	code, _, errOut := runSecret(t, store, false, "", "secret", "set", "--service", "svc", "--account", "me", "tok")
	if code != 1 || !strings.Contains(errOut, `unknown command "tok"`) && !strings.Contains(errOut, "accepts 0 arg(s)") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = runSecret(t, store, false, "", "secret", "set", "--service", "svc", "--account", "me", "--value", "tok")
	if code != 1 || !strings.Contains(errOut, "unknown flag: --value") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

// TestSecretSetTTY prompts on stderr and reads without echo from the
// terminal's file descriptor.
func TestSecretSetTTY(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	io, _, out, errOut := Test(true)
	io.In = r
	store := &secret.Memory{}
	f := &Factory{IO: io, SecretStore: func() secret.Store { return store }}
	var gotFd int
	cmd := NewCmdSecretSet(f, func(o *SecretSetOptions) error {
		o.ReadPassword = func(fd int) ([]byte, error) { gotFd = fd; return []byte("typed-secret"), nil }
		return secretSetRun(o)
	})
	cmd.SetArgs([]string{"--service", "anthropic", "--account", "default"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	check(t, 0, out.String(), errOut.String(), 0,
		"stored secret: service \"anthropic\" account \"default\"\n",
		"Value for service \"anthropic\" account \"default\" (input hidden): \n")
	if gotFd != int(r.Fd()) {
		t.Errorf("read fd %d, want stdin's %d", gotFd, r.Fd())
	}
	if v, _ := store.Get(context.Background(), "anthropic", "default"); v != "typed-secret" {
		t.Errorf("stored %q", v)
	}
}

func TestSecretSetTTYWithoutFd(t *testing.T) {
	code, out, errOut := runSecret(t, &secret.Memory{}, true, "tok\n", "secret", "set", "--service", "s", "--account", "a")
	check(t, code, out, errOut, 1, "", "corral: reading the secret: stdin is a terminal without a file descriptor\n")
}

func TestSecretGet(t *testing.T) {
	store := &secret.Memory{}
	_ = store.Set(context.Background(), "svc", "me", "tok")
	code, out, errOut := runSecret(t, store, true, "", "secret", "get", "--service", "svc", "--account", "me")
	check(t, code, out, errOut, 0, "tok\n", "")
	code, out, errOut = runSecret(t, store, false, "", "secret", "get", "--service", "svc", "--account", "me")
	check(t, code, out, errOut, 0, "tok", "")
}

func TestSecretGetMissing(t *testing.T) {
	for _, tty := range []bool{true, false} {
		code, out, errOut := runSecret(t, &secret.Memory{}, tty, "", "secret", "get", "--service", "svc", "--account", "me")
		check(t, code, out, errOut, 1, "",
			"corral: secret not found: service \"svc\" account \"me\"\n"+
				"hint: store it: corral secret set --service svc --account me\n")
	}
}

func TestSecretRm(t *testing.T) {
	store := &secret.Memory{}
	_ = store.Set(context.Background(), "svc", "me", "tok")
	code, out, errOut := runSecret(t, store, true, "", "secret", "rm", "--service", "svc", "--account", "me")
	check(t, code, out, errOut, 0, "deleted secret: service \"svc\" account \"me\"\n", "")
	code, out, errOut = runSecret(t, store, false, "", "secret", "rm", "--service", "svc", "--account", "me")
	check(t, code, out, errOut, 1, "",
		"corral: secret not found: service \"svc\" account \"me\"\n"+
			"hint: store it: corral secret set --service svc --account me\n")
	_ = store.Set(context.Background(), "svc", "me", "tok")
	code, out, errOut = runSecret(t, store, false, "", "secret", "rm", "--service", "svc", "--account", "me")
	check(t, code, out, errOut, 0, "", "")
}

func TestSecretUnavailable(t *testing.T) {
	code, out, errOut := runSecret(t, &secret.Memory{Unavailable: true}, false, "", "secret", "get", "--service", "s", "--account", "a")
	check(t, code, out, errOut, 1, "",
		"corral: secret store unavailable: service \"s\" account \"a\"\nhint: secret.Memory is set unavailable\n")
}

func TestSecretFlagsRequired(t *testing.T) {
	for _, sub := range []string{"set", "get", "rm"} {
		code, out, errOut := runSecret(t, &secret.Memory{}, false, "", "secret", sub)
		check(t, code, out, errOut, 1, "", "corral: required flag(s) \"account\", \"service\" not set\n")
		code, out, errOut = runSecret(t, &secret.Memory{}, false, "", "secret", sub, "--service", "", "--account", "a")
		check(t, code, out, errOut, 1, "", "corral: --service and --account must not be empty\n")
	}
}

func TestPrintErrorHints(t *testing.T) {
	var b strings.Builder
	err := errors.Join(
		fmt.Errorf("starting session: %w", secret.NotFound("a", "b")),
		hint.New(errors.New("second"), "do the second thing"),
		secret.NotFound("a", "b"), // same hint once
		errors.New("no hint"),
	)
	printError(&b, err)
	want := "corral: starting session: secret not found: service \"a\" account \"b\"\nsecond\n" +
		"secret not found: service \"a\" account \"b\"\nno hint\n" +
		"hint: store it: corral secret set --service a --account b\n" +
		"hint: do the second thing\n"
	if b.String() != want {
		t.Errorf("printError:\n%s\nwant:\n%s", b.String(), want)
	}
}
