package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/audit"
)

// `corral egress` shows the brokered credentials the box used, from the
// audit log: a line per credential with its uses and last use, and the
// refused requests counted.
func TestEgressShowsCredentialUse(t *testing.T) {
	e := setup(t, "")
	l := seedEgress(t, e)
	al, err := audit.Open(l.AuditLog())
	if err != nil {
		t.Fatal(err)
	}
	last := fixedNow.Add(-2 * time.Minute)
	for _, ev := range []audit.Event{
		{Time: last, Kind: audit.KindCredentialUse, Box: e.box, Fields: map[string]any{audit.FieldCredential: "github", audit.FieldCount: 2,
			audit.FieldSession: "ab12", audit.FieldLast: last.UTC(), audit.FieldClass: "git-receive-pack", audit.FieldMethod: "POST"}},
		{Time: last, Kind: audit.KindCredentialRefused, Box: e.box, Fields: map[string]any{audit.FieldCount: 70000, audit.FieldReason: "token"}},
		{Time: last, Kind: audit.KindCredentialUse, Box: "other-box", Fields: map[string]any{audit.FieldCredential: "x", audit.FieldCount: 1}},
	} {
		if err := al.Record(ev); err != nil {
			t.Fatal(err)
		}
	}
	al.Close()
	_, out, _ := runEgressAt(e, true, fixedNow)
	want := "\nbrokered credentials:\n  github   2 uses          last 2m ago\n  refused  70000 requests  (no valid token, a foreign Host, or outside the funnel)\n"
	if !strings.Contains(out, want) {
		t.Errorf("output lacks\n%s\ngot:\n%s", want, out)
	}
	_, out, _ = runEgressAt(e, false, fixedNow)
	if !strings.Contains(out, "credential\tgithub\t2\t"+last.UTC().Format(time.RFC3339)) || !strings.Contains(out, "credential-refused\t70000") {
		t.Errorf("machine rows:\n%s", out)
	}
	_, out, _ = runEgressAt(e, false, fixedNow, "--json")
	var j struct {
		Credentials []audit.CredentialUse `json:"credentials"`
		Refused     int                   `json:"credential_refused"`
	}
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		t.Fatal(err)
	}
	if len(j.Credentials) != 1 || j.Credentials[0].Uses != 2 || j.Credentials[0].Sessions != 1 || j.Refused != 70000 {
		t.Errorf("json %+v", j)
	}
}
