package credential

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/funnel"
	"github.com/corral-dev/corral/core/secret"
)

// The broker's control socket: a Unix socket (mode 0600, in the 0700
// directory ~/.corral/run) on which the box's sessions ask the broker what
// it serves. The broker answers only peers of its own user (SO_PEERCRED on
// Linux, LOCAL_PEERCRED on macOS: peerUID). One connection carries one
// dialogue, each message one line of JSON:
//
//	session: {"op":"wants"}                         broker: {"wants":["HOST_VAR",...]}
//	session: {"op":"open","session":ID,"supply":{}} broker: {"token":"...","routes":[...]}
//
// A session supplies only the wanted variables it has: the values travel
// over the socket, never a command line or a child's environment. A
// session a laptop started on this host over ssh may bring the laptop's
// credential relay ("relay":{"socket":...,"token":...}, relay.go): the
// broker then serves the credentials it cannot read itself as relayed,
// for that session through that relay. A relay is a socket and a token,
// never a key.

type controlRequest struct {
	Op      string            `json:"op"`
	Session string            `json:"session,omitempty"`
	Supply  map[string]string `json:"supply,omitempty"`
	Relay   *relayOffer       `json:"relay,omitempty"`
}

// relayOffer is a session's relay on the control socket.
type relayOffer struct {
	Socket string `json:"socket"`
	Token  string `json:"token"`
}

type controlReply struct {
	Wants    []string     `json:"wants,omitempty"`
	Token    string       `json:"token,omitempty"`
	Routes   []Route      `json:"routes,omitempty"`
	Keychain []secret.Ref `json:"keychain,omitempty"`
	Error    string       `json:"error,omitempty"`
}

const (
	// maxControlLine caps one message either way.
	maxControlLine = 256 << 10
	// controlTimeout bounds one dialogue.
	controlTimeout = 5 * time.Second
)

// ErrNoControl means the broker does not answer on its control socket (a
// broker of an older corral, or none).
var ErrNoControl = errors.New("the box's broker does not answer on its control socket")

// Ask asks the box's broker, on its control socket at path, what it serves
// to session, supplying the wanted host variables getenv has.
func Ask(ctx context.Context, path, session string, getenv func(string) (string, bool)) (Served, error) {
	return AskRelayed(ctx, path, session, getenv, nil)
}

// AskRelayed is Ask for a session that brings the laptop's credential
// relay (nil: none).
func AskRelayed(ctx context.Context, path, session string, getenv func(string) (string, bool), relay *egress.Relay) (Served, error) {
	ctx, cancel := context.WithTimeout(ctx, controlTimeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return Served{}, fmt.Errorf("%w: %s: %w", ErrNoControl, path, err)
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	br := bufio.NewReaderSize(io.LimitReader(c, 2*maxControlLine), 4096)
	rep, err := exchange(c, br, controlRequest{Op: "wants"})
	if err != nil {
		return Served{}, err
	}
	supply := map[string]string{}
	for _, w := range rep.Wants {
		if getenv == nil || !varNameRe().MatchString(w) {
			continue
		}
		if v, ok := getenv(w); ok && v != "" {
			supply[w] = v
		}
	}
	open := controlRequest{Op: "open", Session: session, Supply: supply}
	if relay != nil {
		open.Relay = &relayOffer{Socket: relay.Socket, Token: relay.Token}
	}
	rep, err = exchange(c, br, open)
	if err != nil {
		return Served{}, err
	}
	s := Served{Token: rep.Token, Routes: rep.Routes, Keychain: rep.Keychain}
	if err := s.check(); err != nil {
		return Served{}, fmt.Errorf("the answer of the box's broker on %s: %w", path, err)
	}
	return s, nil
}

func exchange(c net.Conn, br *bufio.Reader, req controlRequest) (controlReply, error) {
	b, _ := json.Marshal(req)
	if _, err := c.Write(append(b, '\n')); err != nil {
		return controlReply{}, fmt.Errorf("asking the box's broker: %w", err)
	}
	line, err := readLine(br)
	if err != nil {
		return controlReply{}, fmt.Errorf("reading the answer of the box's broker: %w", err)
	}
	var rep controlReply
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rep); err != nil {
		return controlReply{}, fmt.Errorf("the answer of the box's broker: %w", err)
	}
	if rep.Error != "" {
		return controlReply{}, fmt.Errorf("the box's broker: %s", truncateText(rep.Error, 512))
	}
	return rep, nil
}

func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, isPrefix, err := br.ReadLine()
		if err != nil {
			return nil, err
		}
		line = append(line, chunk...)
		if len(line) > maxControlLine {
			return nil, errors.New("message too long")
		}
		if !isPrefix {
			return line, nil
		}
	}
}

// Control serves a Holder on a control socket.
type Control struct {
	ln     *net.UnixListener
	h      *Holder
	logger *slog.Logger
	uid    int
	wg     sync.WaitGroup
}

// ListenControl listens on the Unix socket path (mode 0600). A stale
// socket there is replaced; a live one, or any other file, is an error.
func ListenControl(path string, h *Holder, logger *slog.Logger) (*Control, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ln, err := funnel.ListenSocket(path, "broker control socket")
	if err != nil {
		return nil, err
	}
	return &Control{ln: ln, h: h, logger: logger, uid: os.Getuid()}, nil
}

// Serve answers until ctx is done, then closes the socket.
func (c *Control) Serve(ctx context.Context) {
	go func() {
		<-ctx.Done()
		c.ln.Close()
	}()
	for {
		uc, err := c.ln.AcceptUnix()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				c.wg.Wait()
				return
			}
			c.logger.Warn("accepting on the broker control socket", "err", err)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			c.serve(uc)
		}()
	}
}

// Close stops listening.
func (c *Control) Close() error { return c.ln.Close() }

func (c *Control) serve(uc *net.UnixConn) {
	defer uc.Close()
	uid, err := peerUID(uc)
	if err != nil || uid != c.uid {
		c.logger.Warn("broker control socket: refusing a peer that is not this user", "uid", uid, "err", err)
		return
	}
	_ = uc.SetDeadline(time.Now().Add(controlTimeout))
	br := bufio.NewReaderSize(io.LimitReader(uc, 2*maxControlLine), 4096)
	for range 2 {
		line, err := readLine(br)
		if err != nil {
			return
		}
		var req controlRequest
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		var rep controlReply
		switch err := dec.Decode(&req); {
		case err != nil:
			rep.Error = "malformed request: " + err.Error()
		case req.Op == "wants":
			rep.Wants = c.h.Wants()
		case req.Op == "open":
			var relay *egress.Relay
			if req.Relay != nil {
				relay = &egress.Relay{Socket: req.Relay.Socket, Token: req.Relay.Token}
			}
			s, err := c.h.AnswerRelayed(req.Session, req.Supply, relay)
			if err != nil {
				rep.Error = err.Error()
			} else {
				rep.Token, rep.Routes, rep.Keychain = s.Token, s.Routes, s.Keychain
			}
		default:
			rep.Error = fmt.Sprintf("unknown op %q", truncateText(req.Op, 32))
		}
		b, _ := json.Marshal(rep)
		if _, err := uc.Write(append(b, '\n')); err != nil || rep.Error != "" {
			return
		}
	}
}
