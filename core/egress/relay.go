package egress

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The credential relay: how a credential held by the laptop's keychain
// serves a box on a remote host without the key ever reaching that host
// (docs/REMOTE.md, "Secrets"). Two halves, one rule set:
//
//   - On the laptop, a CredentialBroker built from the laptop's own plan
//     serves [CredentialBroker.RelayHandler] on a private Unix socket that
//     ssh forwards to the remote host (-R). A request there is a
//     credential route request ("/corral/credential/TOKEN/NAME/REST")
//     whose TOKEN is the relay's token for one ssh session; it passes the
//     same checks as the broker's own routes (admit: token, clean path,
//     credential, rules) and gets the key injected on the laptop, which
//     makes the upstream request and streams the answer back. Everything
//     the remote side sends is hostile: the laptop reaches only the
//     upstreams and paths its own credentials' rules allow.
//   - On the remote host, the box's broker holds the credential as
//     relayed ([Credential].Relayed): it checks the box's route token and
//     the rules as for any credential, holds no secret, and sends the
//     request over the forwarded socket of the request's session (given
//     with its token, [CredentialBroker.NewRelayToken]) instead of to the
//     upstream. Each session uses its own laptop connection: a session
//     that came with no relay is refused.

// RelayHost is the Host of every relay request: the socket is the
// address, the name only makes the request strict.
const RelayHost = "corral-relay"

// RefusedSize: a relayed request whose body is larger than the relay
// takes.
const RefusedSize CredentialRefusal = "size"

// RefusedNotGranted: a relay request for a credential this machine holds
// but the remote host was not granted (hosts.toml credentials; see
// [RelayOptions].Withheld).
const RefusedNotGranted CredentialRefusal = "not-granted"

// RefusedFrame: a relay request that is not a plain HTTP/1.1 origin-form
// credential request addressed to the relay (another Host, an absolute
// URI, an upgrade, HTTP/2).
const RefusedFrame CredentialRefusal = "frame"

// DefaultRelayMaxBody caps a relayed request's body: an agent's largest
// API request (a long context) with room to spare. A git push is larger,
// and a credential that pushes through a remote box should be the remote
// host's own.
const DefaultRelayMaxBody = 64 << 20

// MaxRelaySocket is the longest socket path a relayed credential may
// name: sun_path is 104 bytes on macOS, 108 on Linux, with its NUL.
const MaxRelaySocket = 103

// Relay is one session's relay as the remote broker reaches it: the Unix
// socket Socket (ssh's end of the reverse forward) and the relay's Token
// for the session.
type Relay struct {
	Socket string
	Token  string
}

func (r Relay) validate() error {
	switch {
	case !filepath.IsAbs(r.Socket) || filepath.Clean(r.Socket) != r.Socket || len(r.Socket) > MaxRelaySocket:
		return fmt.Errorf("relay socket %q: must be a clean absolute path of at most %d bytes", truncate(r.Socket, 128), MaxRelaySocket)
	case !ValidRelayToken(r.Token):
		return errors.New("relay token: not 64 lowercase hex digits")
	}
	return nil
}

// ValidRelayToken reports whether tok has a route token's shape: 64
// lowercase hex digits.
func ValidRelayToken(tok string) bool {
	if len(tok) != TokenLen || strings.ToLower(tok) != tok {
		return false
	}
	_, err := hex.DecodeString(tok)
	return err == nil
}

// relayTransport is a relayed credential's transport: plain HTTP/1.1 over
// the forwarded Unix socket, one request per connection in flight, the
// answer's header capped as upstream answers are.
func relayTransport(socket string, timeout time.Duration) *http.Transport {
	d := &net.Dialer{Timeout: timeout}
	return &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "unix", socket)
		},
		MaxIdleConnsPerHost:    8,
		IdleConnTimeout:        30 * time.Second,
		DisableCompression:     true,
		MaxResponseHeaderBytes: 1 << 20,
	}
}

// relayFrame checks the shape of a request read from the relay socket
// before anything in it is looked at: HTTP/1.x, origin form, Host
// exactly RelayHost, the credential prefix, no protocol upgrade, and a
// declared body no larger than maxBody. The token, the path and the
// rules are admit's.
func relayFrame(req *http.Request, maxBody int64) refusal {
	switch {
	case req.ProtoMajor != 1:
		return refusal{RefusedFrame, http.StatusBadRequest, "relay: HTTP/1.1 only"}
	case req.URL.Scheme != "" || req.URL.Host != "" || req.Host != RelayHost:
		return refusal{RefusedFrame, http.StatusBadRequest, "relay: an origin-form request to " + RelayHost + " only"}
	case !strings.HasPrefix(req.URL.EscapedPath(), CredentialPrefix):
		return refusal{RefusedFrame, http.StatusNotFound, "relay: credential routes only"}
	case req.Header.Get("Upgrade") != "" || headerHasToken(req.Header, "Connection", "upgrade"):
		return refusal{RefusedFrame, http.StatusBadRequest, "relay: no protocol upgrade"}
	case req.ContentLength > maxBody:
		return refusal{RefusedSize, http.StatusRequestEntityTooLarge, fmt.Sprintf("relay: the request body is larger than %d bytes", maxBody)}
	}
	return refusal{}
}

func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// RelayOptions configure [CredentialBroker.RelayHandler].
type RelayOptions struct {
	// MaxBody caps a relayed request's body; 0 is DefaultRelayMaxBody.
	MaxBody int64
	// Withheld reports whether this machine holds credential name but
	// the remote host may not use it (the broker does not serve it), and
	// then what the refusal says: how to grant it. It is asked only for
	// a request whose token was valid. nil: none withheld.
	Withheld func(name string) (hint string, ok bool)
}

// RelayHandler is the laptop's side of the relay (see above): one
// credential request per HTTP request, checked by admit exactly as the
// broker's own routes are, the key injected here, the answer streamed
// back as it comes. A body beyond o.MaxBody is refused (413) before the
// upstream is reached when it is declared, and cut off when it is not. A
// credential the remote host was not granted is refused (403,
// [RefusedNotGranted]) with o.Withheld's hint. Every request is logged as
// a credential event.
func (b *CredentialBroker) RelayHandler(o RelayOptions) http.Handler {
	if o.MaxBody <= 0 {
		o.MaxBody = DefaultRelayMaxBody
	}
	return &relayHandler{b: b, maxBody: o.MaxBody, withheld: o.Withheld}
}

type relayHandler struct {
	b        *CredentialBroker
	maxBody  int64
	withheld func(string) (string, bool)
}

func (h *relayHandler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b := h.b
	b.requests.Add(1)
	ev := CredentialEvent{Time: time.Now(), Method: methodClass(req.Method)}
	fail := func(rf refusal) {
		ev.Refusal, ev.Status, ev.Err = rf.refusal, rf.status, rf.msg
		b.logEvent(ev)
		w.Header().Set("X-Corral-Credential-Error", strconv.Itoa(rf.status))
		w.Header().Set("Connection", "close")
		http.Error(w, "corral: "+rf.msg, rf.status)
	}
	if rf := relayFrame(req, h.maxBody); rf.status != 0 {
		fail(rf)
		return
	}
	c, rest, _, rf := b.admit(&ev, req, nil)
	if rf.refusal == RefusedUnknown && ev.Name != "" && h.withheld != nil {
		if hint, ok := h.withheld(ev.Name); ok {
			rf = refusal{RefusedNotGranted, http.StatusForbidden, fmt.Sprintf("credential %q is held by the laptop, which does not let this host use it: %s", ev.Name, hint)}
		}
	}
	if rf.status == 0 && c.Relayed {
		rf = refusal{status: http.StatusBadGateway, msg: fmt.Sprintf("credential %q is relayed here too; a relay never relays", c.Name)}
	}
	if rf.status != 0 {
		fail(rf)
		return
	}
	in := req.Clone(req.Context())
	removeHopHeaders(in.Header)
	in.Header.Del("Expect")
	if req.Body != nil && req.Body != http.NoBody {
		in.Body = http.MaxBytesReader(w, req.Body, h.maxBody)
	}
	out, rt, rf := b.outbound(c, nil, in, rest)
	if rf.status != 0 {
		fail(rf)
		return
	}
	resp, err := rt.RoundTrip(out)
	if err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			fail(refusal{RefusedSize, http.StatusRequestEntityTooLarge, fmt.Sprintf("relay: the request body is larger than %d bytes", h.maxBody)})
			return
		}
		// Never the URL: it holds the path and the query.
		if ue := (*url.Error)(nil); errors.As(err, &ue) {
			err = ue.Err
		}
		fail(refusal{status: http.StatusBadGateway, msg: "forwarding to credential " + c.Name + " upstream " + ev.Upstream + ": " + truncate(err.Error(), 256)})
		return
	}
	defer resp.Body.Close()
	removeHopHeaders(resp.Header)
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	n, err := streamBody(w, resp.Body)
	ev.Status, ev.Bytes = resp.StatusCode, n
	if err != nil {
		ev.Err = "relaying the response was cut short"
	}
	b.logEvent(ev)
}

// streamBody copies an answer as it comes, flushing each piece: an
// agent's API streams its answer as server-sent events.
func streamBody(w http.ResponseWriter, r io.Reader) (int64, error) {
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	var n int64
	for {
		k, err := r.Read(buf)
		if k > 0 {
			if _, werr := w.Write(buf[:k]); werr != nil {
				return n, werr
			}
			n += int64(k)
			if ferr := rc.Flush(); ferr != nil {
				return n, ferr
			}
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}
