package broker

import (
	"context"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/credential"
	"github.com/corral-dev/corral/core/secret"
)

// dialogStore is a keychain whose item needs the "allow access" dialog:
// a Get would raise it (and is counted); Probe says so without asking.
type dialogStore struct {
	secret.Memory
	gets atomic.Int32
}

func (s *dialogStore) Get(ctx context.Context, service, account string) (string, error) {
	s.gets.Add(1)
	return "sk-from-a-dialog", nil
}

func (*dialogStore) Probe(context.Context, string, string) (secret.Access, error) {
	return secret.AccessPrompts, nil
}

// The box's broker never raises a Keychain dialog: a request for a
// credential whose item needs one is answered at once with a 502 naming
// the item and corral secret set, and the store is never read.
func TestBoxBrokerNeverRaisesAKeychainDialog(t *testing.T) {
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer up.Close()
	l, name := newBox(t, "")
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: up.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	trusted := "[credentials.anthropic]\nupstream = \"" + up.URL + "\"\nheader = \"x-api-key\"\nkeychain = { service = \"api\", account = \"me\" }\nca = \"" + ca + "\"\n"
	if err := os.MkdirAll(filepath.Dir(l.ProjectConfig(name)), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(l.ProjectConfig(name), []byte(trusted), 0o600); err != nil {
		t.Fatal(err)
	}
	store := &dialogStore{}
	addr := start(t, Options{Layout: l, Platform: linux, Box: name, Listen: "127.0.0.1:0", Secrets: store})
	served, err := credential.Ask(context.Background(), l.BrokerControl(name), "s1", nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(20 * time.Second))
		begin := time.Now()
		io.WriteString(c, "GET /corral/credential/"+served.Token+"/anthropic/v1/messages HTTP/1.1\r\nHost: 192.168.5.4:42001\r\nConnection: close\r\n\r\n")
		b, _ := io.ReadAll(c)
		c.Close()
		if took := time.Since(begin); took > 3*time.Second {
			t.Errorf("the answer took %s", took)
		}
		if resp := string(b); !strings.HasPrefix(resp, "HTTP/1.1 502") || !strings.Contains(resp, "corral secret set --service api --account me") {
			t.Errorf("answer %q, want a 502 naming corral secret set", resp)
		}
	}
	if n := store.gets.Load(); n != 0 {
		t.Errorf("the broker read the item %d times (each a dialog)", n)
	}
}
