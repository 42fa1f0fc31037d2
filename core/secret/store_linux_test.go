package secret

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/desktoptest"
	"github.com/godbus/dbus/v5"
)

// keyring starts a private bus with an unlocked gnome-keyring, points this
// process at it, and returns the environment for secret-tool.
func keyring(t *testing.T) []string {
	addr := desktoptest.StartBus(t)
	env := desktoptest.StartKeyring(t, addr)
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", addr)
	return env
}

func secretTool(t *testing.T, env []string, stdin string, args ...string) string {
	t.Helper()
	bin := desktoptest.LookPath(t, "secret-tool", "libsecret-tools")
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("secret-tool %v: %v", args, err)
	}
	return string(out)
}

func TestSecretServiceReadsSecretTool(t *testing.T) {
	env := keyring(t)
	secretTool(t, env, "tok-from-cli", "store", "--label=corral test", AttrService, "anthropic", AttrAccount, "alice")

	s := &SecretService{}
	ctx := context.Background()
	v, err := s.Get(ctx, "anthropic", "alice")
	if err != nil || v != "tok-from-cli" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	// Set updates the item secret-tool made rather than adding a second one.
	if err := s.Set(ctx, "anthropic", "alice", "rotated"); err != nil {
		t.Fatal(err)
	}
	if out := secretTool(t, env, "", "lookup", AttrService, "anthropic", AttrAccount, "alice"); out != "rotated" {
		t.Fatalf("secret-tool lookup = %q", out)
	}
	if out := secretTool(t, env, "", "search", "--all", AttrService, "anthropic", AttrAccount, "alice"); strings.Count(out, "secret = ") != 1 {
		t.Fatalf("want one item, secret-tool search says:\n%s", out)
	}
}

func TestSecretServiceRoundTrip(t *testing.T) {
	env := keyring(t)
	s := &SecretService{}
	ctx := context.Background()

	_, err := s.Get(ctx, "gh", "bob")
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get missing: %v, want ErrNotFound", err)
	}
	if !strings.Contains(err.Error(), `service "gh" account "bob"`) {
		t.Errorf("error does not name service and account: %v", err)
	}
	var e *Error
	if !errors.As(err, &e) || e.Hint() != "store it: corral secret set --service gh --account bob" {
		t.Errorf("hint: %v", err)
	}

	if err := s.Set(ctx, "gh", "bob", "v1 ünïcode"); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Get(ctx, "gh", "bob"); err != nil || v != "v1 ünïcode" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	if out := secretTool(t, env, "", "lookup", AttrService, "gh", AttrAccount, "bob"); out != "v1 ünïcode" {
		t.Fatalf("secret-tool lookup = %q", out)
	}
	if err := s.Set(ctx, "gh", "bob", "v2"); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Get(ctx, "gh", "bob"); err != nil || v != "v2" {
		t.Fatalf("Get after update = %q, %v", v, err)
	}
	// Another account under the same service is a different secret.
	if _, err := s.Get(ctx, "gh", "carol"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get other account: %v", err)
	}
	if err := s.Set(ctx, "gh", "empty", ""); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Get(ctx, "gh", "empty"); err != nil || v != "" {
		t.Fatalf("empty value: %q, %v", v, err)
	}
	if err := s.Delete(ctx, "gh", "bob"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "gh", "bob"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get after Delete: %v", err)
	}
	if err := s.Delete(ctx, "gh", "bob"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second Delete: %v", err)
	}
}

// assertUnavailableQuickly checks that a Get fails with ErrUnavailable well
// within a generous bound (it must not hang; the bound is not a speed target).
func assertUnavailableQuickly(t *testing.T, s *SecretService) {
	t.Helper()
	start := time.Now()
	_, err := s.Get(context.Background(), "svc", "acct")
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Get: %v, want ErrUnavailable", err)
	}
	var e *Error
	if !errors.As(err, &e) || e.Hint() == "" {
		t.Errorf("no hint on %v", err)
	}
	if d := time.Since(start); d > s.Timeout+5*time.Second {
		t.Errorf("Get took %v", d)
	}
	t.Logf("%v (after %v); hint: %s", err, time.Since(start), e.Hint())
}

func TestSecretServiceNoBus(t *testing.T) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/corral-test-bus")
	assertUnavailableQuickly(t, &SecretService{Timeout: time.Second})
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	assertUnavailableQuickly(t, &SecretService{Timeout: time.Second})
}

func TestSecretServiceNoDaemon(t *testing.T) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", desktoptest.StartBus(t))
	assertUnavailableQuickly(t, &SecretService{Timeout: time.Second})
}

// hangingService owns org.freedesktop.secrets and never answers.
type hangingService struct{ stop chan struct{} }

func (h hangingService) OpenSession(string, dbus.Variant) (dbus.Variant, dbus.ObjectPath, *dbus.Error) {
	<-h.stop
	return dbus.MakeVariant(""), "/", nil
}

func TestSecretServiceHungDaemon(t *testing.T) {
	addr := desktoptest.StartBus(t)
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", addr)
	conn := desktoptest.Conn(t, addr)
	h := hangingService{stop: make(chan struct{})}
	t.Cleanup(func() { close(h.stop) })
	if err := conn.Export(h, ssPath, ifService); err != nil {
		t.Fatal(err)
	}
	if reply, err := conn.RequestName(ssName, dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("RequestName: %v %v", reply, err)
	}
	assertUnavailableQuickly(t, &SecretService{Timeout: 500 * time.Millisecond})
}

func TestSecretServiceLocked(t *testing.T) {
	env := keyring(t)
	secretTool(t, env, "v", "store", "--label=x", AttrService, "s", AttrAccount, "a")
	conn := desktoptest.Conn(t, os.Getenv("DBUS_SESSION_BUS_ADDRESS"))
	svc := conn.Object(ssName, ssPath)
	var coll dbus.ObjectPath
	if err := svc.Call(ifService+".ReadAlias", 0, "default").Store(&coll); err != nil {
		t.Fatal(err)
	}
	var locked []dbus.ObjectPath
	var prompt dbus.ObjectPath
	if err := svc.Call(ifService+".Lock", 0, []dbus.ObjectPath{coll}).Store(&locked, &prompt); err != nil || prompt != "/" {
		t.Fatalf("Lock: %v prompt %v", err, prompt)
	}
	// Unlocking needs a prompt, which cannot be shown here (no display):
	// the store must give up with ErrUnavailable, not hang.
	s := &SecretService{Timeout: 2 * time.Second}
	start := time.Now()
	_, err := s.Get(context.Background(), "s", "a")
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Get from locked keyring: %v, want ErrUnavailable", err)
	}
	t.Logf("%v after %v", err, time.Since(start))
	if err := s.Set(context.Background(), "s", "new", "v"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Set into locked keyring: %v, want ErrUnavailable", err)
	}
}

// TestSecretServiceProbe: doctor's probe tells a readable, a missing and
// a locked item apart against a real gnome-keyring, and never unlocks
// (no prompt: the locked keyring stays locked).
func TestSecretServiceProbe(t *testing.T) {
	env := keyring(t)
	secretTool(t, env, "v", "store", "--label=x", AttrService, "s", AttrAccount, "a")
	s := &SecretService{Timeout: 5 * time.Second}
	ctx := context.Background()
	for _, tt := range []struct {
		service, account string
		want             Access
	}{{"s", "a", AccessReadable}, {"s", "other", AccessMissing}} {
		if got, err := s.Probe(ctx, tt.service, tt.account); err != nil || got != tt.want {
			t.Errorf("Probe(%s, %s) = %v, %v; want %v", tt.service, tt.account, got, err, tt.want)
		}
	}

	conn := desktoptest.Conn(t, os.Getenv("DBUS_SESSION_BUS_ADDRESS"))
	svc := conn.Object(ssName, ssPath)
	var coll dbus.ObjectPath
	if err := svc.Call(ifService+".ReadAlias", 0, "default").Store(&coll); err != nil {
		t.Fatal(err)
	}
	var locked []dbus.ObjectPath
	var prompt dbus.ObjectPath
	if err := svc.Call(ifService+".Lock", 0, []dbus.ObjectPath{coll}).Store(&locked, &prompt); err != nil || prompt != "/" {
		t.Fatalf("Lock: %v prompt %v", err, prompt)
	}
	start := time.Now()
	if got, err := s.Probe(ctx, "s", "a"); err != nil || got != AccessPrompts {
		t.Errorf("Probe of a locked item = %v, %v; want %v", got, err, AccessPrompts)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Probe of a locked item took %v: it waited on a prompt", d)
	}
	v, err := conn.Object(ssName, coll).GetProperty(ifCollection + ".Locked")
	if l, _ := v.Value().(bool); err != nil || !l {
		t.Errorf("the keyring is no longer locked after Probe (%v)", err)
	}
}

// TestSecretServiceProbeNoBus: without a session bus the probe cannot
// tell, and says why.
func TestSecretServiceProbeNoBus(t *testing.T) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/bus")
	got, err := (&SecretService{Timeout: time.Second}).Probe(context.Background(), "s", "a")
	if got != AccessUnknown || !errors.Is(err, ErrUnavailable) {
		t.Errorf("Probe = %v, %v; want unknown and ErrUnavailable", got, err)
	}
}

func TestSearchAccess(t *testing.T) {
	for _, tt := range []struct {
		unlocked, locked int
		want             Access
	}{{0, 0, AccessMissing}, {1, 0, AccessReadable}, {1, 1, AccessReadable}, {0, 2, AccessPrompts}} {
		if got := searchAccess(tt.unlocked, tt.locked); got != tt.want {
			t.Errorf("searchAccess(%d, %d) = %v, want %v", tt.unlocked, tt.locked, got, tt.want)
		}
	}
}

func TestDefaultIsSecretService(t *testing.T) {
	if _, ok := Default().(*SecretService); !ok {
		t.Errorf("Default() = %T", Default())
	}
}
