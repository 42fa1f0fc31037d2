package box

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/credential"
	"github.com/corral-dev/corral/core/launchenv"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/secret"
)

// countingStore is a keychain that counts its reads by item.
type countingStore struct {
	secret.Memory
	mu    sync.Mutex
	reads map[secret.Ref]int
	left  time.Duration // the time the last read's context had left
}

func (s *countingStore) Get(ctx context.Context, service, account string) (string, error) {
	s.mu.Lock()
	if s.reads == nil {
		s.reads = map[secret.Ref]int{}
	}
	s.reads[secret.Ref{Service: service, Account: account}]++
	if d, ok := ctx.Deadline(); ok {
		s.left = time.Until(d)
	}
	s.mu.Unlock()
	return s.Memory.Get(ctx, service, account)
}

// TestSessionPreflightsBrokeredKeychainItems: a session with a terminal
// reads each keychain item its box's broker reads once before the agent
// starts, bounded by the interactive timeout (the Keychain asks now, with
// a person there, who may take a while to answer), and a session
// without one reads none of them (nobody would answer).
func TestSessionPreflightsBrokeredKeychainItems(t *testing.T) {
	home, err := os.MkdirTemp("", "cpf") // short: the control socket path
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	l := paths.Layout{Home: filepath.Join(home, "h")}
	if err := os.MkdirAll(l.RunDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	broker := config.NetworkBroker
	ref := config.SecretRef{Service: "corral", Account: "anthropic"}
	c := config.Config{Network: &broker, KeychainEnv: map[string]config.SecretRef{"ANTHROPIC_API_KEY": ref}}
	r := boxmeta.Resolved{Platform: config.Platform{OS: "linux", Arch: "amd64"}, Loaded: config.Result{Effective: config.Effective{Config: c}}}
	noenv := func(string) (string, bool) { return "", false }
	h, err := credential.NewHolder(credential.Plan(r.Loaded.Settings()), credential.HolderConfig{Getenv: noenv, Store: &secret.Memory{}})
	if err != nil {
		t.Fatal(err)
	}
	m := boxmeta.Meta{Name: "web-3f2a1c", Network: config.NetworkBroker, BrokerPort: 42001}
	ctl, err := credential.ListenControl(l.BrokerControl(m.Name), h, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); ctl.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	s := &Service{Layout: l, Logger: discard()}
	for _, tty := range []bool{true, false} {
		store := &countingStore{}
		if err := store.Set(context.Background(), ref.Service, ref.Account, "sk-real"); err != nil {
			t.Fatal(err)
		}
		in := launchenv.Input{Settings: r.Loaded.Settings(), Getenv: noenv, Secrets: store, Box: m.Name, Project: "/p",
			GitConfig: func(context.Context, string) (string, error) { return "", nil }}
		env, err := s.sessionEnv(context.Background(), r, m, newSessionID(), in, tty, nil)
		if err != nil {
			t.Fatalf("tty %v: %v", tty, err)
		}
		if v, ok := env.Lookup("ANTHROPIC_API_KEY"); !ok || v.Source != launchenv.StageBroker || v.Value() == "sk-real" {
			t.Errorf("tty %v: ANTHROPIC_API_KEY is %v, want the broker's placeholder", tty, v)
		}
		want := 0
		if tty {
			want = 1
		}
		if got := store.reads[secret.Ref{Service: ref.Service, Account: ref.Account}]; got != want {
			t.Errorf("tty %v: %d reads of the brokered item, want %d", tty, got, want)
		}
		if tty && store.left <= secret.DefaultTimeout {
			t.Errorf("the preflight read had %v left, want the interactive timeout (%v)", store.left, secret.InteractiveTimeout)
		}
	}

	// An item whose read raises the Keychain's dialog: the terminal is
	// told which button to press before the read.
	var progress strings.Builder
	s.Progress = &progress
	store := &promptingStore{}
	if err := store.Set(context.Background(), ref.Service, ref.Account, "sk-real"); err != nil {
		t.Fatal(err)
	}
	in := launchenv.Input{Settings: r.Loaded.Settings(), Getenv: noenv, Secrets: store, Box: m.Name, Project: "/p",
		GitConfig: func(context.Context, string) (string, error) { return "", nil }}
	if _, err := s.sessionEnv(context.Background(), r, m, newSessionID(), in, true, nil); err != nil {
		t.Fatal(err)
	}
	if store.readsOf(ref) != 1 || !strings.Contains(progress.String(), `choose "Always Allow"`) || !strings.Contains(progress.String(), `"Allow" was chosen`) {
		t.Errorf("%d reads; the terminal showed %q", store.readsOf(ref), progress.String())
	}
}

// promptingStore is a countingStore whose items always need the dialog
// (a read goes through, as after "Allow", and the next still asks).
type promptingStore struct{ countingStore }

func (*promptingStore) Probe(context.Context, string, string) (secret.Access, error) {
	return secret.AccessPrompts, nil
}

func (s *promptingStore) readsOf(r config.SecretRef) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads[secret.Ref{Service: r.Service, Account: r.Account}]
}
