package packaging

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// skipsCheck runs packaging/ci/e2e-skips.sh on log with the repository's
// allow-list.
func skipsCheck(t *testing.T, log string) (string, int) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "e2e.log")
	if err := os.WriteFile(p, []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("sh", filepath.Join(root, "packaging/ci/e2e-skips.sh"), p).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return string(out), 0
}

// TestE2ESkipsCheck: the end of an e2e run lists every skipped subtest
// with its message (as go test -v prints them: the message under the
// subtest's RUN line, the SKIP line when the parent ends), and fails on a
// skip the allow-list does not name.
func TestE2ESkipsCheck(t *testing.T) {
	const bench = "=== RUN   TestHostFunnel/run_overhead\n" +
		"    bench_e2e_test.go:28: a measurement: set CORRAL_E2E_BENCH=1 (make bench-e2e)\n"
	const other = "=== RUN   TestHostFunnel/this_box's_broker_refuses_another_box's_credential_route\n" +
		"    funnel_e2e_test.go:351: a log line first\n" +
		"    claude_e2e_test.go:769: box corral-e2e-1 is not in broker mode (\"full\"): it has no credential routes\n" +
		"=== RUN   TestHostFunnel/later\n" +
		"=== CONT  TestAppMenu\n" +
		"    desktoptest.go:46: dbus-daemon not installed (apt-get install dbus)\n" +
		"--- SKIP: TestAppMenu (0.01s)\n"
	const end = "--- PASS: TestHostFunnel (300.00s)\n" +
		"    --- SKIP: TestHostFunnel/run_overhead (0.00s)\n" +
		"    --- PASS: TestHostFunnel/later (1.00s)\n"
	out, code := skipsCheck(t, "=== RUN   TestHostFunnel\n"+bench+"=== RUN   TestHostFunnel/later\n"+end+"PASS\n")
	if code != 0 || !strings.Contains(out, "  allowed      TestHostFunnel/run_overhead: a measurement: set CORRAL_E2E_BENCH=1 (make bench-e2e)\n") {
		t.Errorf("an allowed skip: exit %d\n%s", code, out)
	}
	out, code = skipsCheck(t, "=== RUN   TestHostFunnel\n"+bench+other+end+
		"    --- SKIP: TestHostFunnel/this_box's_broker_refuses_another_box's_credential_route (0.00s)\n")
	for _, want := range []string{
		"  NOT ALLOWED  TestHostFunnel/this_box's_broker_refuses_another_box's_credential_route: box corral-e2e-1 is not in broker mode (\"full\"): it has no credential routes\n",
		"  NOT ALLOWED  TestAppMenu: dbus-daemon not installed (apt-get install dbus)\n",
		"=== e2e: 2 skip(s) not on the allow-list",
	} {
		if code != 1 || !strings.Contains(out, want) {
			t.Errorf("skips not allowed: exit %d, want 1 and %q\n%s", code, want, out)
		}
	}
	// The cross-test route check run without the test that records the
	// route (a CORRAL_E2E_RUN subset) is allowed.
	out, code = skipsCheck(t, "=== RUN   TestHostFunnel/this_box's_broker_refuses_another_box's_credential_route\n"+
		"    claude_e2e_test.go:760: no route of another box: neither TestAgentCLIsThroughBroker nor TestClaudeBrokered ran before this test in this lane\n"+
		"--- PASS: TestHostFunnel (1.00s)\n    --- SKIP: TestHostFunnel/this_box's_broker_refuses_another_box's_credential_route (0.00s)\n")
	if code != 0 || !strings.Contains(out, "  allowed      TestHostFunnel/this_box's_broker_refuses") {
		t.Errorf("the route check without its route: exit %d\n%s", code, out)
	}
	out, code = skipsCheck(t, "=== RUN   TestBoxLifecycle\n--- PASS: TestBoxLifecycle (1.00s)\nPASS\n")
	if code != 0 || !strings.Contains(out, "  none\n") {
		t.Errorf("no skip: exit %d\n%s", code, out)
	}
}

// TestE2ESkipAllowList: every pattern of the allow-list has its reason in
// a comment right above it, and matches a skip the suite makes today by
// design (a t.Skip message in cmd/corral/e2e): the list holds no stale or
// speculative entry.
func TestE2ESkipAllowList(t *testing.T) {
	lines := strings.Split(string(readFile(t, "packaging/ci/e2e-skips.allow")), "\n")
	msgs := regexp.MustCompile(`t\.Skipf?\("((?:[^"\\]|\\.)*)"`).FindAllStringSubmatch(e2eSources(t), -1)
	n := 0
	for i, l := range lines {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		n++
		if i == 0 || !strings.HasPrefix(lines[i-1], "#") {
			t.Errorf("allow-list line %d %q: no reason in a comment right above it", i+1, l)
		}
		if _, err := regexp.Compile(l); err != nil {
			t.Errorf("allow-list line %d: %v", i+1, err)
			continue
		}
		// The message part of the pattern (after the test name and ": ")
		// must match a t.Skip message of the suite.
		_, msgPart, ok := strings.Cut(l, ": ")
		if !ok {
			t.Errorf("allow-list line %d %q: no \": \" between the test name and the message", i+1, l)
			continue
		}
		re := regexp.MustCompile(msgPart)
		found := false
		for _, m := range msgs {
			found = found || re.MatchString(strings.ReplaceAll(m[1], `\"`, `"`))
		}
		if !found {
			t.Errorf("allow-list line %d %q matches no t.Skip message of the e2e suite", i+1, l)
		}
	}
	if n == 0 || n > 8 {
		t.Errorf("%d allow-list entries: keep it short and reasoned", n)
	}
}

// TestE2ECrossTestDependencies: TestHostFunnel checks that its broker
// refuses another box's credential route, which an earlier test of the
// same process records (otherRoute): TestAgentCLIsThroughBroker, so both
// must be in the same lane of make test-all, and its file must come first
// (go runs a package's tests file by file, in name order).
func TestE2ECrossTestDependencies(t *testing.T) {
	mk := string(readFile(t, "Makefile"))
	m := regexp.MustCompile(`(?m)^test-all: E2E_SUITE := (.*)$`).FindStringSubmatch(mk)
	if m == nil {
		t.Fatal("Makefile: test-all sets no E2E_SUITE")
	}
	suite := regexp.MustCompile(strings.ReplaceAll(m[1], "$$", "$"))
	for _, name := range []string{"TestAgentCLIsThroughBroker", "TestHostFunnel"} {
		if !suite.MatchString(name) {
			t.Errorf("%s is not in test-all's first lane (E2E_SUITE), which the other needs", name)
		}
	}
	src := func(file string) string { return string(readFile(t, "cmd/corral/e2e/"+file)) }
	if !strings.Contains(src("agents_host_e2e_test.go"), "func TestAgentCLIsThroughBroker(") ||
		!strings.Contains(src("funnel_e2e_test.go"), "func TestHostFunnel(") ||
		!strings.Contains(src("agents_host_e2e_test.go"), "otherRoute = ") {
		t.Error("TestAgentCLIsThroughBroker (agents_host_e2e_test.go, which sets otherRoute) must run before TestHostFunnel (funnel_e2e_test.go)")
	}
}
