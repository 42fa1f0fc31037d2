package box

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/agent"
	"github.com/corral-dev/corral/core/approval"
	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/config"
)

// TestSessionNotices: a session opens with one line per thing the user
// should know, on Progress: another agent than the box's own, and, in
// broker mode, a box that learns; nothing for a box with none of these.
func TestSessionNotices(t *testing.T) {
	f := &fakeLima{insts: map[string]string{}, fail: map[string]string{}}
	s, r := newTestService(t, f)
	var buf bytes.Buffer
	s.Progress = &buf
	now := time.Date(2026, 12, 1, 11, 50, 0, 0, time.Local)
	s.Now = func() time.Time { return now }
	shell, _ := agent.Find(nil, "shell")
	codex, _ := agent.Find(nil, "codex")
	claude := "claude"
	r.Loaded.Config.Agent = &claude

	s.sessionNotices(r, shell)
	if buf.Len() != 0 {
		t.Errorf("a shell in a quiet box: %q", buf.String())
	}
	s.sessionNotices(r, codex)
	if got := buf.String(); got != "corral: box "+r.Project.Box+"'s agent is claude: codex runs only if the box has it installed, and its hosts need corral allow (or set agent = \"codex\" in the box's trusted layer and corral rebuild)\n" {
		t.Errorf("another agent: %q", got)
	}
	buf.Reset()

	broker := config.NetworkBroker
	r.Loaded.Config.Network = &broker
	// A repository's requests: pending ones are counted to approve, a
	// refused one apart, as a verdict (issue 37).
	r.Loaded.Requests = []config.RepoRequest{
		{Key: "egress", Entry: "api.example.test", Pending: true, Status: config.RequestPending},
		{Key: "egress", Entry: "*.com", Status: config.RequestRefused, Risk: config.RiskRefused, Why: "a wildcard over a public suffix"},
	}
	s.sessionNotices(r, shell)
	if got, want := buf.String(), "corral: the repository requests 1 host(s), port(s), toolchain(s) or package(s) not granted yet; review them with: corral approve "+r.Project.Box+"\n"+
		"corral: the repository requests 1 entr(ies) the grant check refuses; they are never allowed (corral config check says why)\n"; got != want {
		t.Errorf("requests %q, want %q", got, want)
	}
	r.Loaded.Requests = nil
	buf.Reset()
	if _, err := approval.StartLearning(s.Layout, r.Project.Box, 30*time.Minute, now.Add(-10*time.Minute), audit.ActorCLI); err != nil {
		t.Fatal(err)
	}
	s.sessionNotices(r, shell)
	if got, want := buf.String(), "corral: box "+r.Project.Box+" is learning until 12:10: its broker allows public hosts off the allow-list and logs them; corral egress learn "+r.Project.Box+" proposes an allow-list\n"; got != want {
		t.Errorf("banner %q, want %q", got, want)
	}
	buf.Reset()
	full := config.NetworkFull
	r.Loaded.Config.Network = &full
	s.sessionNotices(r, shell)
	if strings.Contains(buf.String(), "learning") {
		t.Errorf("a box that does not use the broker: %q", buf.String())
	}
}
