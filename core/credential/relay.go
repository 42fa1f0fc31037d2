package credential

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/funnel"
	"github.com/corral-dev/corral/core/secret"
)

// The laptop's credential relay (docs/REMOTE.md, "Secrets"): while the
// laptop runs a session on a remote host, its own corral serves the
// credentials its keychain (or its environment) holds on a private Unix
// socket, which ssh forwards to the remote host. The remote box's broker
// holds those credentials as relayed (egress.Relay) and sends each
// request it admits over the socket; the relay checks it again with the
// same rules (egress.CredentialBroker.RelayHandler), injects the key here
// and makes the upstream request from here. The key never leaves this
// machine.

// Relay is one session's relay: the local socket ssh forwards, the token
// a request must carry, and the routes it serves.
type Relay struct {
	// Socket is the local end of the forward: mode 0600 in a directory of
	// its own (0700) under the laptop's run directory.
	Socket string
	// Token opens the relay: 256 random bits, for this session only.
	Token  string
	Routes []Route
	// Keychain are the keychain items the relay reads, for the terminal
	// to settle before ssh starts (secret.Decide).
	Keychain []secret.Ref
	// Withheld are the credentials this machine holds for the project but
	// the host was not granted: refused when asked for.
	Withheld []string

	dir    string
	srv    *http.Server
	done   chan struct{}
	closed sync.Once
}

// maxRelayConns bounds the connections the relay serves at once: the
// remote broker keeps a few per credential.
const maxRelayConns = 64

// relayTimeouts: a request's header must arrive within relayHeaderTimeout;
// an idle connection is closed after relayIdleTimeout. A request's
// answer may stream for as long as the upstream sends it (an agent's
// answer takes minutes), until the session ends.
const (
	relayHeaderTimeout = 10 * time.Second
	relayIdleTimeout   = 2 * time.Minute
)

// Grant is what a remote host may use of the credentials this machine
// holds: the names its hosts.toml table grants it (core/remote
// Host.Credentials). The default is none: a host uses a credential held
// here only once the user has named it for that host.
type Grant struct {
	// Host names the remote host (for refusals and the audit).
	Host string
	// Credentials are the names the host may use.
	Credentials []string
	// Hint is what a refusal of a credential held here but not granted
	// tells the box and the user: how to grant it (name: the credential).
	Hint func(name string) string
	// Asked, when set, is called once per credential of this session the
	// host asked for but may not use (the laptop prints the hint).
	Asked func(name string)
}

// StartRelay serves, for session, the credentials this machine's config c
// names, that this machine can read itself (its keychain, its
// environment: cfg.Store and cfg.Getenv), and that g grants the remote
// host, on a new socket under runDir. A credential it holds but g does not
// grant is refused with g.Hint when the host asks for it (and g.Asked
// called once). It returns nil and no error when it holds none. Close it
// when the session ends.
//
// It plans c as the box's broker plans its own (Plan): the relay is the
// planner of what the laptop holds, the remote broker of what the remote
// host holds; a credential neither can read is served by neither.
func StartRelay(runDir, session string, c config.Settings, g Grant, cfg HolderConfig) (*Relay, error) {
	// The box's network is the remote host's to decide; what is planned
	// here is what this machine would hold if the box brokers its
	// credentials, the only mode in which it asks for them.
	c.Network = config.NetworkBroker
	var granted []Spec
	withheld := map[string]bool{}
	for _, s := range Plan(c) {
		switch {
		case slices.Contains(g.Credentials, s.Name):
			granted = append(granted, s)
		default:
			if _, _, ok := source(s, cfg); ok {
				withheld[s.Name] = true // held here, not granted: refused with the hint
			}
		}
	}
	h, err := NewHolder(granted, cfg)
	if err != nil {
		return nil, fmt.Errorf("the credential relay: %w", err)
	}
	served, err := h.Answer(session, nil)
	if err != nil {
		return nil, fmt.Errorf("the credential relay: %w", err)
	}
	if len(served.Routes) == 0 && len(withheld) == 0 {
		return nil, nil
	}
	if served.Token == "" {
		// Nothing granted, something held: the relay still answers, so
		// that a request for a withheld credential is refused with how
		// to grant it (after the token, as every request).
		if served.Token, err = h.Broker().NewToken(session); err != nil {
			return nil, fmt.Errorf("the credential relay: %w", err)
		}
	}
	var askedMu sync.Mutex
	asked := map[string]bool{}
	opts := egress.RelayOptions{Withheld: func(name string) (string, bool) {
		if !withheld[name] {
			return "", false
		}
		askedMu.Lock()
		first := !asked[name]
		asked[name] = true
		askedMu.Unlock()
		if first && g.Asked != nil {
			g.Asked(name)
		}
		hint := "grant it on the laptop"
		if g.Hint != nil {
			hint = g.Hint(name)
		}
		return hint, true
	}}
	if err := os.MkdirAll(runDir, 0o700); err != nil {
		return nil, fmt.Errorf("the credential relay: %w", err)
	}
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, fmt.Errorf("the credential relay: %w", err)
	}
	// Mkdir (not MkdirAll): the directory is new and ours, 0700.
	dir := filepath.Join(runDir, "relay-"+hex.EncodeToString(rnd[:]))
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("the credential relay: %w", err)
	}
	sock := filepath.Join(dir, "s")
	ln, err := funnel.ListenSocket(sock, "the credential relay")
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	r := &Relay{Socket: sock, Token: served.Token, Routes: served.Routes, Keychain: served.Keychain, Withheld: sortedKeys(withheld), dir: dir, done: make(chan struct{}),
		srv: &http.Server{
			Handler:           h.Broker().RelayHandler(opts),
			ReadHeaderTimeout: relayHeaderTimeout,
			IdleTimeout:       relayIdleTimeout,
			MaxHeaderBytes:    1 << 20,
			ErrorLog:          log.New(io.Discard, "", 0),
		}}
	go func() {
		defer close(r.done)
		_ = r.srv.Serve(&limitListener{Listener: ln, sem: make(chan struct{}, maxRelayConns), stop: make(chan struct{})})
	}()
	return r, nil
}

// Close stops serving, ends every request in flight, and removes the
// socket and its directory.
func (r *Relay) Close() error {
	if r == nil {
		return nil
	}
	var err error
	r.closed.Do(func() {
		err = r.srv.Close()
		<-r.done
		err = errors.Join(err, os.RemoveAll(r.dir))
	})
	return err
}

// limitListener accepts at most cap(sem) connections at once; the next
// waits until one closes, or the listener does.
type limitListener struct {
	net.Listener
	sem  chan struct{}
	stop chan struct{}
	once sync.Once
}

func (l *limitListener) Close() error {
	l.once.Do(func() { close(l.stop) })
	return l.Listener.Close()
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.stop:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &releaseConn{Conn: c, release: func() { <-l.sem }}, nil
}

type releaseConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *releaseConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
