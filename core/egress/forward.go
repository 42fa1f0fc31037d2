package egress

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/corral-dev/corral/core/display"
)

// hopHeaders are connection-specific (RFC 9110 section 7.6.1) and are not
// forwarded in either direction.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func removeHopHeaders(h http.Header) {
	for _, v := range h["Connection"] {
		for name := range strings.SplitSeq(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}

// trackedBody is the request body handed to the transport. It records
// whether the client's body was read to the end (if not, the connection is
// mid-body and cannot carry another request), and it can be detached.
//
// The transport may go on reading a request body after RoundTrip returned
// (an upstream that answers before reading the body: the write loop is still
// sending it) and closes it in its own time. The body reads through the
// connection's pooled bufio.Reader, so before that reader goes back to the
// pool handleHTTP calls detach: it wakes a read blocked on the client (a
// past read deadline) and, under mu, marks the body detached. Read holds mu
// for the whole read, so after detach returns no read can reach the pooled
// reader again; later reads fail with errBodyDetached.
type trackedBody struct {
	mu       sync.Mutex
	r        io.Reader
	eof      bool
	detached bool
}

var errBodyDetached = errors.New("request body detached from its client connection")

func (b *trackedBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.detached {
		return 0, errBodyDetached
	}
	if b.eof {
		return 0, io.EOF
	}
	n, err := b.r.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

// Close does not drain: the caller decides.
func (b *trackedBody) Close() error { return nil }

// detach ends every use of the client reader by this body and reports
// whether the body had been read to the end.
func (b *trackedBody) detach(nc net.Conn) bool {
	nc.SetReadDeadline(aLongTimeAgo) //nolint:errcheck // wakes a Read blocked on the client
	b.mu.Lock()
	defer b.mu.Unlock()
	b.detached = true
	b.r = nil
	return b.eof
}

// watchClient cancels cancel when the client goes away (EOF or error on its
// connection) while a request is upstream. It reads through br, so it may
// only run while nothing else does: when the request body was read to the
// end. A pipelined next request stays buffered in br. stop ends the watch
// and waits for it; it must be called before br is used again.
func watchClient(nc net.Conn, br *bufio.Reader, cancel context.CancelFunc) (stop func()) {
	done := make(chan struct{})
	var quit atomic.Bool
	go func() {
		defer close(done)
		if _, err := br.Peek(1); err != nil && !quit.Load() {
			cancel()
		}
	}()
	return func() {
		quit.Store(true)
		nc.SetReadDeadline(aLongTimeAgo) //nolint:errcheck
		<-done
		nc.SetReadDeadline(time.Time{}) //nolint:errcheck
	}
}

var copyBufPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// handleHTTP forwards one absolute-URI request and reports whether the
// connection may carry another one.
func (s *Server) handleHTTP(nc net.Conn, br *bufio.Reader, req *http.Request, bound bool) bool {
	if s.isCredentialRequest(req) {
		return s.handleCredential(nc, br, req, bound)
	}
	if s.isBoxRequest(req) {
		return s.handleBoxRequest(nc, br, req)
	}
	if req.URL.User != nil {
		s.logDecision(authorityDecision(KindHTTP, req.URL.Host, &AuthorityError{Reason: ReasonUserinfo}))
		s.writeError(nc, http.StatusBadRequest, "corral: userinfo in the request URL is not allowed\n")
		return false
	}
	if req.URL.Scheme != "http" || req.URL.Host == "" {
		msg := "corral: this is an egress proxy; send CONNECT host:port or an absolute http:// URI\n"
		if req.URL.Scheme == "https" {
			msg = "corral: use CONNECT for https:// URLs\n"
		}
		s.writeError(nc, http.StatusBadRequest, msg)
		return false
	}
	auth, err := ParseAuthority(req.URL.Host, 80)
	if err != nil {
		s.logDecision(authorityDecision(KindHTTP, req.URL.Host, err))
		s.writeError(nc, http.StatusBadRequest, "corral: bad request target: "+err.Error()+"\n")
		return false
	}
	t := s.admit(KindHTTP, auth, ProxySession(req.Header))
	if !t.d.Allowed {
		s.writeDenied(nc, t)
		if req.ContentLength != 0 || br.Buffered() > 0 {
			lingerClose(nc, br)
		}
		return false
	}

	out := req
	out.RequestURI = ""
	out.Host = req.URL.Host                                                 // the absolute URI wins over any Host header
	out.URL.Host = netip.AddrPortFrom(t.ips[0], uint16(auth.Port)).String() // dial the checked address only
	rt := s.transport
	if s.cfg.Upstream.via(auth.Host, t.ips[0]) {
		rt = s.proxied // the proxy gets the checked address too (see UpstreamProxy)
	}
	keep, res := s.exchange(nc, br, req, out, rt, auth.String())
	if pe := (*ProxyError)(nil); errors.As(res.rtErr, &pe) {
		d, _ := proxyFailure(t, KindHTTP, pe)
		s.logDecision(d)
	}
	return keep
}

// exchangeResult is what a forwarded exchange did, for the credential log.
type exchangeResult struct {
	status int   // the status the client got (502/503 from the broker when the upstream was not reached)
	bytes  int64 // response body bytes relayed to the client
	err    string
	rtErr  error // the round trip's error, when the upstream was not reached
}

// exchange sends out (prepared from req: URL, Host and headers other than
// the hop-by-hop ones) through rt and relays the response to the client.
// It owns the request's lifetime: a forwarding slot, a context that ends
// when the client goes or the broker stops, and the request body, which
// is detached from the client reader before it returns (see trackedBody).
// It reports whether the connection may carry another request. dest names
// the upstream in error messages.
func (s *Server) exchange(nc net.Conn, br *bufio.Reader, req, out *http.Request, rt http.RoundTripper, dest string) (bool, exchangeResult) {
	if !s.takeSlot() {
		s.writeBusy(nc)
		if req.ContentLength != 0 || br.Buffered() > 0 {
			lingerClose(nc, br)
		}
		return false, exchangeResult{status: http.StatusServiceUnavailable, err: "too many requests in flight"}
	}
	defer s.slots.Add(-1)

	// The request lives until its client goes, the broker is stopped, or
	// the exchange ends.
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	hasBody := req.Body != nil && req.Body != http.NoBody
	body := &trackedBody{r: req.Body, eof: !hasBody}
	// Whatever happens below, the transport must be done with the client
	// reader before this returns (see trackedBody).
	bodyDone := false
	defer func() {
		if !bodyDone {
			body.detach(nc)
		}
	}()
	out = out.WithContext(ctx)
	out.Body = body
	if !hasBody {
		out.Body = http.NoBody
	}
	expect := strings.EqualFold(out.Header.Get("Expect"), "100-continue")
	removeHopHeaders(out.Header)
	out.Header.Del("Expect")
	if expect && hasBody {
		// We forward the body as it comes, so let the client send it now.
		if _, err := io.WriteString(nc, "HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
			return false, exchangeResult{err: "client went away"}
		}
	}
	stopWatch := func() {}
	if !hasBody {
		stopWatch = watchClient(nc, br, cancel)
	}
	resp, err := rt.RoundTrip(out)
	if err != nil {
		stopWatch()
		msg := "forwarding to " + dest + ": " + display.Text(err.Error(), 0)
		var extra []string
		if pe := (*ProxyError)(nil); errors.As(err, &pe) {
			msg = "forwarding to " + dest + ": " + pe.Error()
			extra = []string{"X-Corral-Egress-Reason", string(pe.Reason)}
		}
		s.writeError(nc, http.StatusBadGateway, "corral: "+msg+"\n", extra...)
		return false, exchangeResult{status: http.StatusBadGateway, err: msg, rtErr: err}
	}
	defer resp.Body.Close()
	cb := &countingBody{r: resp.Body}
	resp.Body = cb
	res := exchangeResult{status: resp.StatusCode}
	keep := !req.Close && !resp.Close
	whole := s.writeResponse(nc, req, resp, keep)
	keep = whole && keep
	res.bytes = cb.n
	if !whole {
		res.err = "relaying the response was cut short"
	}
	stopWatch()
	bodyDone = true
	eof := body.detach(nc)
	nc.SetReadDeadline(time.Time{}) //nolint:errcheck
	if !eof {
		cancel()            // stop sending the rest of the body upstream
		lingerClose(nc, br) // the client may still be sending it
		return false, res
	}
	return keep && ctx.Err() == nil, res
}

// writeResponse relays resp to the client with its own framing: the length
// when known, chunked for HTTP/1.1 clients otherwise, or close-delimited for
// HTTP/1.0. Each body read is flushed at once so streams (server-sent
// events) are not held back. It reports whether the body was relayed whole.
func (s *Server) writeResponse(nc net.Conn, req *http.Request, resp *http.Response, keep bool) bool {
	removeHopHeaders(resp.Header)
	resp.Header.Del("Content-Length")
	bodyAllowed := req.Method != http.MethodHead && resp.StatusCode >= 200 &&
		resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusNotModified
	chunked := false
	bw := bufio.NewWriterSize(nc, 4096)
	status := resp.Status
	if status == "" {
		status = strconv.Itoa(resp.StatusCode) + " " + http.StatusText(resp.StatusCode)
	}
	bw.WriteString("HTTP/1.1 " + status + "\r\n") //nolint:errcheck // bufio errors surface at Flush
	switch {
	case resp.ContentLength >= 0 && (bodyAllowed || req.Method == http.MethodHead):
		bw.WriteString("Content-Length: " + strconv.FormatInt(resp.ContentLength, 10) + "\r\n") //nolint:errcheck
	case !bodyAllowed:
	case req.ProtoAtLeast(1, 1):
		chunked = true
		bw.WriteString("Transfer-Encoding: chunked\r\n") //nolint:errcheck
	default:
		keep = false
	}
	if !keep {
		bw.WriteString("Connection: close\r\n") //nolint:errcheck
	}
	resp.Header.Write(bw)  //nolint:errcheck
	bw.WriteString("\r\n") //nolint:errcheck
	if !bodyAllowed {
		return bw.Flush() == nil
	}
	// A short body is most likely in hand already: send it with the head.
	if resp.ContentLength < 0 || resp.ContentLength > 32<<10 {
		if bw.Flush() != nil {
			return false
		}
	}
	bp := copyBufPool.Get().(*[]byte)
	defer copyBufPool.Put(bp)
	buf := *bp
	var written int64
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			if chunked {
				bw.WriteString(strconv.FormatInt(int64(n), 16) + "\r\n") //nolint:errcheck
			}
			bw.Write(buf[:n]) //nolint:errcheck
			if chunked {
				bw.WriteString("\r\n") //nolint:errcheck
			}
			written += int64(n)
			if bw.Flush() != nil {
				return false
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return false
		}
	}
	if chunked {
		bw.WriteString("0\r\n\r\n") //nolint:errcheck
	}
	if bw.Flush() != nil {
		return false
	}
	return resp.ContentLength < 0 || written == resp.ContentLength
}
