package egress

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// agentTextErr is an error that says what to do, as core/secret's
// needs-dialog refusal does.
type agentTextErr struct{}

func (agentTextErr) Error() string { return "secret store unavailable: needs the dialog" }
func (agentTextErr) AgentText() string {
	return `the keychain item "api" needs a dialog; run: corral secret set --service api --account me`
}

// A credential whose secret cannot be read without a Keychain dialog is
// refused at once with what the error says to do, not only "see the
// broker log".
func TestCredentialRefusalSaysWhatToDo(t *testing.T) {
	up := newCredUpstream(t, func(w http.ResponseWriter, r *http.Request) {})
	p, _ := startCredProxy(t, []Credential{{Name: "dialog", Upstream: up.srv.URL, Header: HeaderAPIKey, RootCAs: up.pool(),
		Secret: func(context.Context) (string, error) { return "", agentTextErr{} }}})
	resp, body := rawRequest(t, p.addr, "GET /corral/credential/"+p.tok+"/dialog/x HTTP/1.1\r\nHost: 192.168.5.4:4242\r\n\r\n")
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, "corral secret set --service api --account me") || !strings.Contains(body, `credential "dialog"`) {
		t.Errorf("status %d body %q", resp.StatusCode, body)
	}
}
