//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// bgResult is what a corral command run off the test goroutine printed.
type bgResult struct {
	out, errOut string
	code        int
	took        time.Duration
}

// corralBG runs corral args in the background (a held connection blocks
// its session) and sends the result. It never touches t: it may not run
// on the test goroutine.
func (x *h) corralBG(args ...string) <-chan bgResult {
	res := make(chan bgResult, 1)
	cmd := exec.Command(x.bin, append([]string{"-C", x.project}, args...)...)
	cmd.Env = append([]string{}, x.env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	go func() {
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			code = -1
			errOut.WriteString(err.Error())
		}
		res <- bgResult{out.String(), errOut.String(), code, time.Since(start)}
	}()
	return res
}

// boxRequestJSON is one entry of `corral egress --json`'s box_requests.
type boxRequestJSON struct {
	From    string `json:"from"`
	What    string `json:"what"`
	Request string `json:"request"`
	Why     string `json:"why"`
	Who     struct {
		Exe     string `json:"exe"`
		PID     int    `json:"pid"`
		Chain   string `json:"chain"`
		Session string `json:"session"`
	} `json:"who"`
	Process     string `json:"process"`
	ThisMachine bool   `json:"this_machine"`
}

func (x *h) boxRequests(t *testing.T) []boxRequestJSON {
	t.Helper()
	var got struct {
		BoxRequests []boxRequestJSON `json:"box_requests"`
	}
	must(t, json.Unmarshal([]byte(x.ok("egress", "--json")), &got))
	return got.BoxRequests
}

// testBoxRequests are the request channel's subtests (issue 29, item 1)
// on a running broker-mode box whose trusted layer allows 127.0.0.0/8
// (TestHostFunnel's box): proxy is the broker as the box reaches it, and
// srv a host loopback upstream. A guest process files a request with a
// reason; it appears in corral egress --json with its reason and process;
// Allow releases a connection held for it; Deny leaves one refused.
func testBoxRequests(t *testing.T, x *h, proxy string, srv *hostServer) {
	// localhost resolves to the host's loopback for the broker, which the
	// box's range lets it dial once the name is allowed.
	asked := "localhost:" + srv.port
	t.Run("a guest process files a request with a reason", func(t *testing.T) {
		x.t = t
		// sh stays the parent of corral-request (a second command follows),
		// so the request names it.
		out := x.ok("run", "--", "sh", "-c", `corral-request egress "$1" --why "the test server, for issue 29"; echo filed`, "sh", asked)
		if !strings.Contains(out, "filed") {
			t.Fatalf("corral-request: %q", out)
		}
		if _, _, code := x.corral("run", "--", "corral-request", "egress", "*.example.test", "--why", "wide"); code == 0 {
			t.Error("a wildcard request was accepted")
		}
	})
	t.Run("the request appears with its reason and process", func(t *testing.T) {
		x.t = t
		var found *boxRequestJSON
		rs := x.boxRequests(t)
		for i := range rs {
			if rs[i].Request == asked {
				found = &rs[i]
			}
		}
		if found == nil {
			t.Fatalf("box_requests lacks %s: %+v", asked, rs)
		}
		if found.From != "box" || found.What != "egress" || found.Why != "the test server, for issue 29" ||
			found.Who.Exe != "sh" || found.Who.PID <= 1 || !regexp.MustCompile(`^[0-9a-f]{12}$`).MatchString(found.Who.Session) ||
			!strings.HasPrefix(found.Process, "sh (pid ") || !found.ThisMachine {
			t.Errorf("request: %+v", *found)
		}
		// It granted nothing.
		if strings.Contains(x.ok("allow", "--list", x.box), "localhost") {
			t.Error("the request added an approval")
		}
	})
	t.Run("Allow releases a held connection", func(t *testing.T) {
		x.t = t
		res := x.corralBG("run", "--", "curl", "-sS", "--max-time", "90", "--noproxy", "", "-x", proxy, "http://"+asked+"/held")
		select {
		case r := <-res:
			t.Fatalf("the connection was answered before the answer: %+v", r)
		case <-time.After(8 * time.Second):
		}
		x.ok("allow", x.box, asked, "--once")
		select {
		case r := <-res:
			if r.code != 0 || r.out != "HOST-REACHED /held" || srv.count("/held") != 1 {
				t.Fatalf("held connection after Allow: %+v (server hits %d)", r, srv.count("/held"))
			}
		case <-time.After(40 * time.Second):
			t.Fatal("held connection not released within 40s of Allow")
		}
		for _, r := range x.boxRequests(t) {
			if r.Request == asked {
				t.Errorf("still pending after Allow: %+v", r)
			}
		}
	})
	t.Run("Deny leaves a held connection refused", func(t *testing.T) {
		x.t = t
		const refused = "refused.example.test"
		x.ok("run", "--", "corral-request", "egress", refused, "--why", "to be denied")
		res := x.corralBG("run", "--", "curl", "-sS", "--max-time", "90", "-o", "/dev/null", "-w", "%{http_code}", "--noproxy", "", "-x", proxy, "http://"+refused+"/")
		select {
		case r := <-res:
			t.Fatalf("the connection was answered before the answer: %+v", r)
		case <-time.After(8 * time.Second):
		}
		start := time.Now()
		x.ok("deny", x.box, refused)
		select {
		case r := <-res:
			if r.out != "403" {
				t.Fatalf("held connection after Deny: %+v, want 403", r)
			}
			if took := time.Since(start); took > 30*time.Second {
				t.Errorf("refused %v after Deny: it waited for the hold's end", took)
			}
		case <-time.After(70 * time.Second):
			t.Fatal("held connection not answered within 70s of Deny")
		}
		for _, r := range x.boxRequests(t) {
			if r.Request == refused {
				t.Errorf("still pending after Deny: %+v", r)
			}
		}
	})
}
