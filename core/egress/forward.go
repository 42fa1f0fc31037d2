package egress

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
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

// trackedBody records whether the client's request body was read to the end;
// if not, the connection is mid-body and cannot carry another request.
// Close does not drain: the caller decides.
type trackedBody struct {
	r   io.Reader
	eof bool
}

func (b *trackedBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

func (b *trackedBody) Close() error { return nil }

var copyBufPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// handleHTTP forwards one absolute-URI request and reports whether the
// connection may carry another one.
func (s *Server) handleHTTP(nc net.Conn, br *bufio.Reader, req *http.Request) bool {
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
	t := s.check(context.Background(), KindHTTP, auth)
	s.logDecision(t.d)
	if !t.d.Allowed {
		s.writeDenied(nc, t)
		if req.ContentLength != 0 || br.Buffered() > 0 {
			lingerClose(nc, br)
		}
		return false
	}

	body := &trackedBody{r: req.Body, eof: req.Body == nil || req.Body == http.NoBody}
	out := req
	out.Body = body
	if body.eof {
		out.Body = http.NoBody
	}
	out.RequestURI = ""
	out.Host = req.URL.Host                                                 // the absolute URI wins over any Host header
	out.URL.Host = netip.AddrPortFrom(t.ips[0], uint16(auth.Port)).String() // dial the checked address only
	expect := strings.EqualFold(out.Header.Get("Expect"), "100-continue")
	removeHopHeaders(out.Header)
	out.Header.Del("Expect")
	if expect && !body.eof {
		// We forward the body as it comes, so let the client send it now.
		if _, err := io.WriteString(nc, "HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
			return false
		}
	}
	resp, err := s.transport.RoundTrip(out)
	if err != nil {
		s.writeError(nc, http.StatusBadGateway, "corral: forwarding to "+auth.String()+": "+err.Error()+"\n")
		return false
	}
	defer resp.Body.Close()
	keep := !req.Close && !resp.Close
	keep = s.writeResponse(nc, req, resp, keep) && keep
	return keep && body.eof
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
