package broker

import (
	"context"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/credential"
	"github.com/corral-dev/corral/core/secret"
)

// TestBoxBrokerHoldsCredentials runs a box's broker whose trusted config
// has a [credentials] table and whose host environment has Claude's key:
// the box's requests get the real secrets added upstream (over TLS,
// verified with the configured CA), and the egress log gets one
// credential line per request without the values.
func TestBoxBrokerHoldsCredentials(t *testing.T) {
	var mu sync.Mutex
	got := map[string]string{}
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got[r.URL.Path] = r.Header.Get("X-Api-Key") + "|" + r.Header.Get("Authorization")
		mu.Unlock()
		io.WriteString(w, "ok")
	}))
	defer up.Close()
	l, name := newBox(t, "")
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: up.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	trusted := `[credentials.anthropic]
upstream = "` + up.URL + `"
header = "x-api-key"
env_from_host = "TEST_BROKER_KEY"
ca = "` + ca + `"

[credentials.git]
upstream = "` + up.URL + `/base"
header = "authorization"
env_from_host = "TEST_BROKER_TOKEN"
ca = "` + ca + `"
`
	if err := os.MkdirAll(filepath.Dir(l.ProjectConfig(name)), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(l.ProjectConfig(name), []byte(trusted), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TEST_BROKER_KEY", "sk-real-key")
	t.Setenv("TEST_BROKER_TOKEN", "tok-real")
	addr := start(t, Options{Layout: l, Platform: linux, Box: name, Listen: "127.0.0.1:0"})
	served, err := credential.Ask(context.Background(), l.BrokerControl(name), "s1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(served.Names(), []string{"anthropic", "git"}) {
		t.Fatalf("served %+v", served)
	}

	do := func(target, abs string) int {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, "GET "+abs+target+" HTTP/1.1\r\nHost: 192.168.5.4:42001\r\nX-Api-Key: box\r\nAuthorization: Bearer box\r\nConnection: close\r\n\r\n")
		b, _ := io.ReadAll(c)
		if !strings.HasPrefix(string(b), "HTTP/1.1 ") {
			t.Fatalf("%s: answer %q", target, b)
		}
		var code int
		for _, ch := range string(b)[9:12] {
			code = code*10 + int(ch-'0')
		}
		return code
	}
	if code := do("/corral/credential/"+served.Token+"/anthropic/v1/messages", ""); code != 200 {
		t.Fatalf("anthropic: %d", code)
	}
	// Absolute form to the broker's guest address (a client using its
	// proxy setting) is the same route.
	if code := do("/corral/credential/"+served.Token+"/git/o/r.git/info/refs", "http://192.168.5.4:42001"); code != 200 {
		t.Fatalf("git: %d", code)
	}
	mu.Lock()
	defer mu.Unlock()
	if got["/v1/messages"] != "sk-real-key|" || got["/base/o/r.git/info/refs"] != "|Bearer tok-real" {
		t.Errorf("upstream saw %q", got)
	}
	// The broker logs a request after its answer went out.
	var log string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(l.EgressLog(name))
		if log = string(b); strings.Count(log, `"kind":"credential"`) >= 2 {
			break
		}
	}
	for _, want := range []string{`"kind":"credential","name":"anthropic"`, `"kind":"credential","name":"git"`} {
		if !strings.Contains(log, want) {
			t.Errorf("egress log lacks %s:\n%s", want, log)
		}
	}
	if strings.Contains(log, "sk-real-key") || strings.Contains(log, "tok-real") {
		t.Error("the egress log holds a secret")
	}
}

// refusingStore is a keychain whose every read is refused after a pause
// (a Deny in the "allow access" dialog); it counts the reads.
type refusingStore struct {
	mu    sync.Mutex
	reads int
}

func (s *refusingStore) Get(ctx context.Context, service, account string) (string, error) {
	s.mu.Lock()
	s.reads++
	s.mu.Unlock()
	time.Sleep(100 * time.Millisecond)
	return "", secret.Unavailable(service, account, errors.New("access was denied"), "choose Always Allow")
}

func (s *refusingStore) Set(context.Context, string, string, string) error { return nil }
func (s *refusingStore) Delete(context.Context, string, string) error      { return nil }

func (s *refusingStore) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads
}

// TestBoxBrokerReadsAKeychainItemOnce: concurrent and retried requests
// for a keychain credential whose read is refused cause one keychain read
// (one dialog), not one per request: the broker's store is a
// secret.Shared (single flight, refusal remembered).
func TestBoxBrokerReadsAKeychainItemOnce(t *testing.T) {
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer up.Close()
	l, name := newBox(t, "")
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: up.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	trusted := `[credentials.anthropic]
upstream = "` + up.URL + `"
header = "x-api-key"
keychain = { service = "api", account = "me" }
ca = "` + ca + `"
`
	if err := os.MkdirAll(filepath.Dir(l.ProjectConfig(name)), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(l.ProjectConfig(name), []byte(trusted), 0o600); err != nil {
		t.Fatal(err)
	}
	store := &refusingStore{}
	addr := start(t, Options{Layout: l, Platform: linux, Box: name, Listen: "127.0.0.1:0", Secrets: store})
	served, err := credential.Ask(context.Background(), l.BrokerControl(name), "s1", nil)
	if err != nil {
		t.Fatal(err)
	}
	get := func() string {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return err.Error()
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(20 * time.Second))
		io.WriteString(c, "GET /corral/credential/"+served.Token+"/anthropic/v1/messages HTTP/1.1\r\nHost: 192.168.5.4:42001\r\nConnection: close\r\n\r\n")
		b, _ := io.ReadAll(c)
		line, _, _ := strings.Cut(string(b), "\r\n")
		return line
	}
	var wg sync.WaitGroup
	answers := make([]string, 5)
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = get()
		}()
	}
	wg.Wait()
	answers = append(answers, get()) // a retry after the refusal
	for _, a := range answers {
		if !strings.HasPrefix(a, "HTTP/1.1 5") {
			t.Errorf("answer %q, want a 5xx (the secret could not be read)", a)
		}
	}
	if n := store.count(); n != 1 {
		t.Errorf("%d keychain reads for %d requests, want 1 (one dialog)", n, len(answers))
	}
}
