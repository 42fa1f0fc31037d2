package secret

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// Button is the answer the fake Keychain's dialog gets.
type button int

const (
	alwaysAllow button = iota
	allowOnce
	deny
)

// fakeKeychain models the macOS Keychain's access list: an item corral
// made (or one "Always Allow" was chosen for) reads silently; any other
// raises the dialog, answered with the item's scripted button. It counts
// dialogs and records what out held when each came up.
type fakeKeychain struct {
	mu      sync.Mutex
	values  map[Ref]string
	trusted map[Ref]bool
	answer  map[Ref]button
	dialogs int
	out     *strings.Builder
	shown   []string // out's text when each dialog came up
}

func newFakeKeychain(out *strings.Builder) *fakeKeychain {
	return &fakeKeychain{values: map[Ref]string{}, trusted: map[Ref]bool{}, answer: map[Ref]button{}, out: out}
}

func (k *fakeKeychain) add(r Ref, v string, trusted bool, b button) {
	k.values[r], k.trusted[r], k.answer[r] = v, trusted, b
}

func (k *fakeKeychain) Get(_ context.Context, service, account string) (string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	r := Ref{service, account}
	v, ok := k.values[r]
	if !ok {
		return "", NotFound(service, account)
	}
	if k.trusted[r] {
		return v, nil
	}
	k.dialogs++
	if k.out != nil {
		k.shown = append(k.shown, k.out.String())
	}
	switch k.answer[r] {
	case alwaysAllow:
		k.trusted[r] = true
		return v, nil
	case allowOnce:
		return v, nil
	}
	err, _ := keychainError("reading keychain", service, account, errSecUserCanceled, nil)
	return "", err
}

func (k *fakeKeychain) Probe(_ context.Context, service, account string) (Access, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	r := Ref{service, account}
	switch _, ok := k.values[r]; {
	case !ok:
		return AccessMissing, nil
	case k.trusted[r]:
		return AccessReadable, nil
	}
	return AccessPrompts, nil
}

func (k *fakeKeychain) Set(context.Context, string, string, string) error { return nil }
func (k *fakeKeychain) Delete(context.Context, string, string) error      { return nil }

func (k *fakeKeychain) dialogCount() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.dialogs
}

// The dialog policy, item by item: at most one dialog per item, at the
// terminal, each preceded by the line naming "Always Allow"; what was
// decided is what the broker (Silent over the same keychain) then does,
// at once and without a dialog of its own.
func TestDecideThenBroker(t *testing.T) {
	api, git, gone, own := Ref{"api", "me"}, Ref{"git", "me"}, Ref{"nope", "me"}, Ref{"own", "me"}
	for _, tc := range []struct {
		name       string
		trusted    bool
		b          button
		missing    bool
		want       ItemState
		dialogs    int
		brokerGets bool   // the broker reads the value afterwards
		says       string // a line after the dialog ("" = none)
	}{
		{name: "always allow", b: alwaysAllow, want: ItemSilent, dialogs: 1, brokerGets: true},
		{name: "allow", b: allowOnce, want: ItemAllowedOnce, dialogs: 1, says: `"Allow" was chosen`},
		{name: "deny", b: deny, want: ItemDenied, dialogs: 1, says: "was not read"},
		{name: "corral's own item", trusted: true, want: ItemSilent, brokerGets: true},
		{name: "missing", missing: true, want: ItemMissing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			k := newFakeKeychain(&out)
			it := api
			switch {
			case tc.missing:
				it = gone
			case tc.trusted:
				it = own
			}
			if !tc.missing {
				k.add(it, "v-"+it.Service, tc.trusted, tc.b)
			}
			k.add(git, "other", true, deny) // another item, silent: no line, no dialog
			ds := Decide(context.Background(), k, []Ref{it, git, it}, &out)
			if len(ds) != 2 || ds[0].Ref != it || ds[0].State != tc.want || ds[1].State != ItemSilent {
				t.Fatalf("decisions %+v, want %v then silent", ds, tc.want)
			}
			if k.dialogs != tc.dialogs {
				t.Errorf("%d dialogs, want %d", k.dialogs, tc.dialogs)
			}
			if tc.dialogs > 0 {
				// The line came before the dialog, and names the button.
				if len(k.shown) != 1 || !strings.Contains(k.shown[0], `choose "Always Allow"`) || !strings.Contains(k.shown[0], fmt.Sprintf("%q", it.Service)) {
					t.Errorf("before the dialog the terminal showed %q", k.shown)
				}
			} else if out.Len() != 0 {
				t.Errorf("no dialog, yet the terminal shows %q", out.String())
			}
			after := strings.TrimPrefix(out.String(), strings.Join(k.shown, ""))
			if tc.says == "" && tc.dialogs > 0 && strings.Count(out.String(), "\n") != 1 {
				t.Errorf("extra lines: %q", out.String())
			}
			if tc.says != "" && (!strings.Contains(after, tc.says) || !strings.Contains(after, "corral secret set --service api --account me")) {
				t.Errorf("after the dialog %q, want %q and the command", after, tc.says)
			}

			// The broker: no dialog, an answer at once.
			broker := NewShared(Silent(k))
			before := k.dialogCount()
			start := time.Now()
			v, err := broker.Get(context.Background(), it.Service, it.Account)
			if d := time.Since(start); d > time.Second {
				t.Errorf("the broker's read took %s", d)
			}
			if k.dialogCount() != before {
				t.Errorf("the broker raised a dialog")
			}
			switch {
			case tc.brokerGets && (err != nil || v != "v-"+it.Service):
				t.Errorf("broker read %q, %v", v, err)
			case tc.missing && !errors.Is(err, ErrNotFound):
				t.Errorf("broker read of a missing item: %v", err)
			case !tc.brokerGets && !tc.missing:
				var se *Error
				if !errors.Is(err, ErrUnavailable) || !errors.As(err, &se) ||
					!strings.Contains(se.AgentText(), "corral secret set --service api --account me") || !strings.Contains(se.AgentText(), `"api"`) {
					t.Errorf("broker refusal %v (agent text %q)", err, agentText(err))
				}
			}
		})
	}
}

func agentText(err error) string {
	var se *Error
	if errors.As(err, &se) {
		return se.AgentText()
	}
	return ""
}

// Many requests of the agent at once for an item that needs the dialog:
// every one is answered at once, none raises a dialog, and the refusal is
// remembered (one probe, not one per request).
func TestSilentBrokerNeverWaits(t *testing.T) {
	k := newFakeKeychain(nil)
	k.add(Ref{"api", "me"}, "v", false, alwaysAllow)
	probes := &countingProber{fakeKeychain: k}
	broker := NewShared(Silent(probes))
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if _, err := broker.Get(ctx, "api", "me"); !errors.Is(err, errNeedsDialog) {
				t.Errorf("got %v, want the needs-dialog refusal", err)
			}
		})
	}
	wg.Wait()
	if k.dialogs != 0 {
		t.Errorf("%d dialogs", k.dialogs)
	}
	if n := probes.n(); n > 16 || n < 1 {
		t.Errorf("%d probes", n)
	}
}

type countingProber struct {
	*fakeKeychain
	mu     sync.Mutex
	probes int
}

func (c *countingProber) Probe(ctx context.Context, service, account string) (Access, error) {
	c.mu.Lock()
	c.probes++
	c.mu.Unlock()
	return c.fakeKeychain.Probe(ctx, service, account)
}

func (c *countingProber) n() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.probes
}

// A store that can read silently itself is used for that (macOS), and one
// that can do neither is read as it is.
func TestSilentPrefersItsStoresOwnSilentRead(t *testing.T) {
	s := Silent(&silentOnly{})
	if v, err := s.Get(context.Background(), "a", "b"); v != "silent" || err != nil {
		t.Errorf("got %q, %v", v, err)
	}
	var m Memory
	_ = m.Set(context.Background(), "a", "b", "v")
	if v, err := Silent(&m).Get(context.Background(), "a", "b"); v != "v" || err != nil {
		t.Errorf("plain store: %q, %v", v, err)
	}
}

type silentOnly struct{ Memory }

func (*silentOnly) GetSilent(context.Context, string, string) (string, error) { return "silent", nil }
