package secret

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/godbus/dbus/v5"
)

// Default returns the platform secret store: the Secret Service on Linux.
func Default() Store { return &SecretService{} }

// Attribute names of corral's Secret Service items. "corral secret set" and
// secret-tool must use the same ones.
const (
	AttrService = "service"
	AttrAccount = "account"
)

const (
	ssName       = "org.freedesktop.secrets"
	ssPath       = dbus.ObjectPath("/org/freedesktop/secrets")
	ifService    = "org.freedesktop.Secret.Service"
	ifCollection = "org.freedesktop.Secret.Collection"
	ifItem       = "org.freedesktop.Secret.Item"
	ifPrompt     = "org.freedesktop.Secret.Prompt"
	ifSession    = "org.freedesktop.Secret.Session"
	noPrompt     = dbus.ObjectPath("/")
)

// Hints for ErrUnavailable on Linux.
const (
	hintNoBus     = "start a desktop session (or a D-Bus session bus) and make sure DBUS_SESSION_BUS_ADDRESS is set"
	hintNoService = "start a Secret Service provider: gnome-keyring-daemon --start --components=secrets (or KeePassXC with Secret Service integration)"
	hintLocked    = "unlock your login keyring (for example in Seahorse, or by logging in to the desktop), then retry"
	hintTimeout   = "the keyring did not answer in time; check that gnome-keyring-daemon (or your Secret Service provider) is running and not waiting on a prompt"
)

// SecretService is the Linux Store over the freedesktop Secret Service D-Bus
// API on the session bus. It talks D-Bus directly (godbus) rather than through
// zalando/go-keyring so that every call, including connecting, is bounded by a
// context: go-keyring uses the shared session connection with no timeout.
//
// Each call opens its own private bus connection, tied to the call's context,
// so a hung daemon cannot wedge later calls. Secrets cross the bus in a
// "plain" session, as with go-keyring; the session bus is private to the user.
// The bus is never auto-launched (godbus would run dbus-launch and leave a
// daemon behind when no address is known).
type SecretService struct {
	// Timeout bounds calls whose context has no deadline; 0 means
	// DefaultTimeout.
	Timeout time.Duration
}

var (
	_ Store  = (*SecretService)(nil)
	_ Prober = (*SecretService)(nil)
)

// secretStruct is the Secret Service's Secret type, signature (oayays).
type secretStruct struct {
	Session     dbus.ObjectPath
	Parameters  []byte
	Value       []byte
	ContentType string
}

// ssCall is one call's connection and session.
type ssCall struct {
	ctx              context.Context
	conn             *dbus.Conn
	svc              dbus.BusObject
	session          dbus.ObjectPath
	service, account string
}

// sessionBusAddress returns the session bus address without auto-launching.
func sessionBusAddress() string {
	if a := os.Getenv("DBUS_SESSION_BUS_ADDRESS"); a != "" && a != "autolaunch:" {
		return a
	}
	dir := os.Getenv("XDG_RUNTIME_DIR")
	if dir == "" {
		dir = fmt.Sprintf("/run/user/%d", os.Getuid())
	}
	p := filepath.Join(dir, "bus")
	if st, err := os.Stat(p); err == nil && st.Mode()&os.ModeSocket != 0 {
		return "unix:path=" + p
	}
	return ""
}

func (s *SecretService) open(ctx context.Context, service, account string) (*ssCall, error) {
	addr := sessionBusAddress()
	if addr == "" {
		return nil, Unavailable(service, account, errors.New("no D-Bus session bus address"), hintNoBus)
	}
	conn, err := dbus.Connect(addr, dbus.WithContext(ctx))
	if err != nil {
		if ctx.Err() != nil {
			return nil, Unavailable(service, account, fmt.Errorf("connecting to the session bus: %w", ctx.Err()), hintTimeout)
		}
		return nil, Unavailable(service, account, fmt.Errorf("connecting to the session bus: %w", err), hintNoBus)
	}
	c := &ssCall{ctx: ctx, conn: conn, svc: conn.Object(ssName, ssPath), service: service, account: account}
	var out dbus.Variant
	if err := c.svc.CallWithContext(ctx, ifService+".OpenSession", 0, "plain", dbus.MakeVariant("")).Store(&out, &c.session); err != nil {
		conn.Close()
		return nil, c.fail("opening a Secret Service session", err)
	}
	return c, nil
}

func (c *ssCall) close() {
	// Closing the connection also ends the session on the service side;
	// the explicit Close is a courtesy with the remaining time.
	c.conn.Object(ssName, c.session).CallWithContext(c.ctx, ifSession+".Close", 0)
	c.conn.Close()
}

// fail maps a D-Bus failure to ErrUnavailable where the store cannot be
// used, and to a plain wrapped error otherwise.
func (c *ssCall) fail(op string, err error) error {
	if c.ctx.Err() != nil {
		return Unavailable(c.service, c.account, fmt.Errorf("%s: %w", op, c.ctx.Err()), hintTimeout)
	}
	if name := dbusErrorName(err); name != "" {
		switch name {
		case "org.freedesktop.DBus.Error.ServiceUnknown",
			"org.freedesktop.DBus.Error.NameHasNoOwner",
			"org.freedesktop.DBus.Error.Spawn.ChildExited",
			"org.freedesktop.DBus.Error.Spawn.ExecFailed",
			"org.freedesktop.DBus.Error.Spawn.ServiceNotFound":
			return Unavailable(c.service, c.account, fmt.Errorf("%s: no Secret Service on the session bus: %w", op, err), hintNoService)
		case "org.freedesktop.Secret.Error.IsLocked":
			return Unavailable(c.service, c.account, fmt.Errorf("%s: keyring is locked: %w", op, err), hintLocked)
		}
	}
	if errors.Is(err, dbus.ErrClosed) {
		return Unavailable(c.service, c.account, fmt.Errorf("%s: %w", op, err), hintNoBus)
	}
	return fmt.Errorf("%s for service %q account %q: %w", op, c.service, c.account, err)
}

func (c *ssCall) attrs() map[string]string {
	return map[string]string{AttrService: c.service, AttrAccount: c.account}
}

// find returns the unlocked items matching service and account, unlocking
// locked ones (which may show a prompt on a desktop).
func (c *ssCall) find() ([]dbus.ObjectPath, error) {
	var unlocked, locked []dbus.ObjectPath
	if err := c.svc.CallWithContext(c.ctx, ifService+".SearchItems", 0, c.attrs()).Store(&unlocked, &locked); err != nil {
		return nil, c.fail("searching the keyring", err)
	}
	if len(locked) > 0 {
		more, err := c.unlock(locked)
		if err != nil {
			return nil, err
		}
		unlocked = append(unlocked, more...)
	}
	return unlocked, nil
}

// unlock unlocks objects, running the service's prompt if it wants one, and
// returns what was unlocked. A dismissed prompt is ErrUnavailable.
func (c *ssCall) unlock(objs []dbus.ObjectPath) ([]dbus.ObjectPath, error) {
	var done []dbus.ObjectPath
	var prompt dbus.ObjectPath
	if err := c.svc.CallWithContext(c.ctx, ifService+".Unlock", 0, objs).Store(&done, &prompt); err != nil {
		return nil, c.fail("unlocking the keyring", err)
	}
	if prompt == noPrompt {
		return done, nil
	}
	res, err := c.prompt(prompt, "unlocking the keyring")
	if err != nil {
		return nil, err
	}
	if v, ok := res.Value().([]dbus.ObjectPath); ok {
		done = append(done, v...)
	}
	if len(done) == 0 {
		return nil, Unavailable(c.service, c.account, errors.New("keyring is locked"), hintLocked)
	}
	return done, nil
}

// prompt runs a Secret Service prompt and waits for it to complete. A
// dismissed prompt means the keyring stayed locked.
func (c *ssCall) prompt(p dbus.ObjectPath, op string) (dbus.Variant, error) {
	if err := c.conn.AddMatchSignalContext(c.ctx, dbus.WithMatchObjectPath(p), dbus.WithMatchInterface(ifPrompt), dbus.WithMatchMember("Completed")); err != nil {
		return dbus.Variant{}, c.fail(op, err)
	}
	ch := make(chan *dbus.Signal, 8)
	c.conn.Signal(ch)
	defer c.conn.RemoveSignal(ch)
	if err := c.conn.Object(ssName, p).CallWithContext(c.ctx, ifPrompt+".Prompt", 0, "").Err; err != nil {
		return dbus.Variant{}, c.fail(op, err)
	}
	for {
		select {
		case <-c.ctx.Done():
			return dbus.Variant{}, Unavailable(c.service, c.account, fmt.Errorf("%s: waiting for the unlock prompt: %w", op, c.ctx.Err()), hintLocked)
		case sig := <-ch:
			if sig == nil || sig.Path != p || sig.Name != ifPrompt+".Completed" || len(sig.Body) < 2 {
				continue
			}
			dismissed, _ := sig.Body[0].(bool)
			if dismissed {
				return dbus.Variant{}, Unavailable(c.service, c.account, fmt.Errorf("%s: prompt dismissed, keyring is locked", op), hintLocked)
			}
			res, _ := sig.Body[1].(dbus.Variant)
			return res, nil
		}
	}
}

// Get implements Store.
func (s *SecretService) Get(ctx context.Context, service, account string) (string, error) {
	ctx, cancel := withTimeout(ctx, s.Timeout)
	defer cancel()
	c, err := s.open(ctx, service, account)
	if err != nil {
		return "", err
	}
	defer c.close()
	items, err := c.find()
	if err != nil {
		return "", err
	}
	if len(items) == 0 {
		return "", NotFound(service, account)
	}
	var sec secretStruct
	if err := c.conn.Object(ssName, items[0]).CallWithContext(ctx, ifItem+".GetSecret", 0, c.session).Store(&sec); err != nil {
		return "", c.fail("reading secret", err)
	}
	return string(sec.Value), nil
}

// Probe implements Prober: it searches for the item without unlocking
// anything, so no prompt is shown. An item only in a locked collection
// needs the unlock prompt (the Secret Service's counterpart of the
// Keychain's dialog): reading it with nobody watching fails.
func (s *SecretService) Probe(ctx context.Context, service, account string) (Access, error) {
	ctx, cancel := withTimeout(ctx, s.Timeout)
	defer cancel()
	c, err := s.open(ctx, service, account)
	if err != nil {
		return AccessUnknown, err
	}
	defer c.close()
	var unlocked, locked []dbus.ObjectPath
	if err := c.svc.CallWithContext(ctx, ifService+".SearchItems", 0, c.attrs()).Store(&unlocked, &locked); err != nil {
		return AccessUnknown, c.fail("searching the keyring", err)
	}
	return searchAccess(len(unlocked), len(locked)), nil
}

// searchAccess classifies SearchItems' answer: an unlocked match is read
// without a prompt (Get reads the first unlocked one); only locked
// matches need the unlock prompt; none is a missing item.
func searchAccess(unlocked, locked int) Access {
	switch {
	case unlocked > 0:
		return AccessReadable
	case locked > 0:
		return AccessPrompts
	}
	return AccessMissing
}

// Set implements Store. An existing item is updated in place (so one stored
// by secret-tool keeps its label); otherwise an item is created in the
// default collection.
func (s *SecretService) Set(ctx context.Context, service, account, value string) error {
	ctx, cancel := withTimeout(ctx, s.Timeout)
	defer cancel()
	c, err := s.open(ctx, service, account)
	if err != nil {
		return err
	}
	defer c.close()
	sec := secretStruct{Session: c.session, Value: []byte(value), ContentType: "text/plain; charset=utf8"}
	items, err := c.find()
	if err != nil {
		return err
	}
	if len(items) > 0 {
		for _, it := range items {
			if err := c.conn.Object(ssName, it).CallWithContext(ctx, ifItem+".SetSecret", 0, sec).Err; err != nil {
				return c.fail("updating secret", err)
			}
		}
		return nil
	}

	var coll dbus.ObjectPath
	if err := c.svc.CallWithContext(ctx, ifService+".ReadAlias", 0, "default").Store(&coll); err != nil {
		return c.fail("finding the default keyring", err)
	}
	if coll == noPrompt {
		return Unavailable(service, account, errors.New("no default keyring collection"), hintLocked)
	}
	locked, err := c.conn.Object(ssName, coll).GetProperty(ifCollection + ".Locked")
	if err != nil {
		return c.fail("checking the default keyring", err)
	}
	if l, _ := locked.Value().(bool); l {
		if _, err := c.unlock([]dbus.ObjectPath{coll}); err != nil {
			return err
		}
	}
	props := map[string]dbus.Variant{
		ifItem + ".Label":      dbus.MakeVariant(fmt.Sprintf("corral: %s (%s)", service, account)),
		ifItem + ".Attributes": dbus.MakeVariant(c.attrs()),
	}
	var item, prompt dbus.ObjectPath
	if err := c.conn.Object(ssName, coll).CallWithContext(ctx, ifCollection+".CreateItem", 0, props, sec, true).Store(&item, &prompt); err != nil {
		return c.fail("storing secret", err)
	}
	if prompt != noPrompt {
		if _, err := c.prompt(prompt, "storing secret"); err != nil {
			return err
		}
	}
	return nil
}

// Delete implements Store. It deletes every item matching service and
// account.
func (s *SecretService) Delete(ctx context.Context, service, account string) error {
	ctx, cancel := withTimeout(ctx, s.Timeout)
	defer cancel()
	c, err := s.open(ctx, service, account)
	if err != nil {
		return err
	}
	defer c.close()
	items, err := c.find()
	if err != nil {
		return err
	}
	if len(items) == 0 {
		return NotFound(service, account)
	}
	for _, it := range items {
		var prompt dbus.ObjectPath
		if err := c.conn.Object(ssName, it).CallWithContext(ctx, ifItem+".Delete", 0).Store(&prompt); err != nil {
			return c.fail("deleting secret", err)
		}
		if prompt != noPrompt {
			if _, err := c.prompt(prompt, "deleting secret"); err != nil {
				return err
			}
		}
	}
	return nil
}

// dbusErrorName returns the D-Bus error name in err's chain, or "".
func dbusErrorName(err error) string {
	var v dbus.Error
	if errors.As(err, &v) {
		return v.Name
	}
	var p *dbus.Error
	if errors.As(err, &p) && p != nil {
		return p.Name
	}
	return ""
}
