//go:build e2e

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// credentialRulesRefuse runs in TestClaudeBrokered's box, whose trusted
// layer limits the git token: through gitfake (on rulePort) to the one
// repository /repo.git, through gitro (the same git host, on roPort) to
// fetches. The host serves another repository beside it, other.git, that
// the token could push to (http.receivepack is on): only the broker's
// rules stand between the box and it. From the box, through the real git
// and the broker's credential routes (url.insteadOf):
//
//   - a fetch and a push of /repo.git through gitfake work;
//   - a push to /other.git through gitfake is refused (403) and
//     other.git gets no branch;
//   - a fetch through gitro works, its push is refused and repo.git is
//     unchanged;
//   - the egress log has a credential line for each refusal: the
//     credential, reason "rule", status 403, the push's path class.
//
// A few seconds on the running box.
func credentialRulesRefuse(t *testing.T, x *h, gitRoot, rulePort, roPort string) {
	script := fmt.Sprintf(`set -u
c() { git -c user.name=box -c user.email=box@example.test "$@"; }
rm -rf /tmp/rules /tmp/rules-ro
git clone -q https://127.0.0.1:%[1]s/repo.git /tmp/rules && echo FETCH-ALLOWED
cd /tmp/rules || exit 1
c commit -q --allow-empty -m rules-allowed
git push -q origin HEAD:main && echo PUSH-ALLOWED
c commit -q --allow-empty -m rules-other
if git push -q https://127.0.0.1:%[1]s/other.git HEAD:main 2>/tmp/rules-other.err; then echo OTHER-PUSHED; else echo OTHER-REFUSED; cat /tmp/rules-other.err; fi
git clone -q https://127.0.0.1:%[2]s/repo.git /tmp/rules-ro && echo RO-FETCH-ALLOWED
cd /tmp/rules-ro || exit 1
c commit -q --allow-empty -m rules-read-only
if git push -q origin HEAD:main 2>/tmp/rules-ro.err; then echo RO-PUSHED; else echo RO-REFUSED; cat /tmp/rules-ro.err; fi
`, rulePort, roPort)
	out, errOut, code := x.corral("run", "--", "sh", "-c", script)
	if code != 0 {
		t.Fatalf("git in the box: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"FETCH-ALLOWED", "PUSH-ALLOWED", "OTHER-REFUSED", "RO-FETCH-ALLOWED", "RO-REFUSED"} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("no %s from the box:\n%s\n%s", want, out, errOut)
		}
	}
	// The refusals are the broker's: the git host answers 401 without the
	// token and would have taken both pushes with it.
	if n := strings.Count(out, "403"); n < 2 {
		t.Errorf("want both pushes refused with 403 by the broker, got:\n%s", out)
	}
	hostGitOut := func(repo string, args ...string) string {
		b, _ := exec.Command("git", append([]string{"--git-dir", filepath.Join(gitRoot, repo)}, args...)...).Output()
		return strings.TrimSpace(string(b))
	}
	if got := hostGitOut("repo.git", "log", "-1", "--format=%s", "main"); got != "rules-allowed" {
		t.Errorf("the host's repo.git main is at %q, want the allowed push (rules-allowed), not the read-only one", got)
	}
	if got := hostGitOut("other.git", "for-each-ref"); got != "" {
		t.Errorf("other.git got refs from the box:\n%s", got)
	}

	// The egress log: one credential line per refusal, naming the
	// credential and the push, never the token.
	f, err := os.Open(filepath.Join(x.home, "logs", "egress-"+x.box+".jsonl"))
	must(t, err)
	defer f.Close()
	refused := map[string]string{} // credential -> path class
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var e struct {
			Kind, Name, Class, Refusal string
			Status                     int
		}
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Kind != "credential" || e.Refusal != "rule" {
			continue
		}
		if e.Status != 403 {
			t.Errorf("a rule refusal of %s logged with status %d, want 403", e.Name, e.Status)
		}
		refused[e.Name] = e.Class
	}
	for _, name := range []string{"gitfake", "gitro"} {
		if c, ok := refused[name]; !ok || !strings.Contains(c, "git-receive-pack") {
			t.Errorf("egress log: no rule refusal of a push through %s (refusals: %v)", name, refused)
		}
	}
}
