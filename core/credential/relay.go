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
	"sync"
	"time"

	"github.com/corral-dev/corral/core/config"
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

// StartRelay serves, for session, the credentials this machine's config c
// names and this machine can read itself (its keychain, its environment:
// cfg.Store and cfg.Getenv), on a new socket under runDir. It returns nil
// and no error when there is none to serve. Close it when the session
// ends.
//
// It plans c as the box's broker plans its own (Plan): the relay is the
// planner of what the laptop holds, the remote broker of what the remote
// host holds; a credential neither can read is served by neither.
func StartRelay(runDir, session string, c config.Settings, cfg HolderConfig) (*Relay, error) {
	// The box's network is the remote host's to decide; what is planned
	// here is what this machine would hold if the box brokers its
	// credentials, the only mode in which it asks for them.
	c.Network = config.NetworkBroker
	h, err := NewHolder(Plan(c), cfg)
	if err != nil {
		return nil, fmt.Errorf("the credential relay: %w", err)
	}
	served, err := h.Answer(session, nil)
	if err != nil {
		return nil, fmt.Errorf("the credential relay: %w", err)
	}
	if len(served.Routes) == 0 {
		return nil, nil
	}
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
	r := &Relay{Socket: sock, Token: served.Token, Routes: served.Routes, Keychain: served.Keychain, dir: dir, done: make(chan struct{}),
		srv: &http.Server{
			Handler:           h.Broker().RelayHandler(0),
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
