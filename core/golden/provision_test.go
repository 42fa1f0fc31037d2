package golden

import (
	"errors"
	"strings"
	"testing"

	"github.com/corral-dev/corral/core/hint"
)

// TestCheckProvision: the guest's record decides, step by step in order;
// its output is hostile, so junk is ignored and never counts as success.
func TestCheckProvision(t *testing.T) {
	steps := []string{"00-base.sh", "10-packages.sh", "90-done.sh"}
	for _, c := range []struct {
		name, out string
		want      string // "" = passes
	}{
		{"all ok", "00-base.sh 0\n10-packages.sh 0\n90-done.sh 0\n", ""},
		{"any order, extra lines", "junk\n90-done.sh 0\nunknown.sh 1\n10-packages.sh 0\n\n00-base.sh 0\n", ""},
		{"failed", "00-base.sh 0\n10-packages.sh 100\n90-done.sh 0\n", "provision step guest/provision/10-packages.sh failed (exit status 100)"},
		{"first failure wins", "00-base.sh 1\n10-packages.sh 100\n90-done.sh 0\n", "guest/provision/00-base.sh failed (exit status 1)"},
		{"missing", "00-base.sh 0\n90-done.sh 0\n", "provision step guest/provision/10-packages.sh left no record (it did not run to its end)"},
		{"empty", "", "guest/provision/00-base.sh left no record"},
		{"not a number", "00-base.sh ok\n10-packages.sh 0\n90-done.sh 0\n", "guest/provision/00-base.sh failed (exit status 255)"},
		{"empty status", "00-base.sh \n10-packages.sh 0\n90-done.sh 0\n", "guest/provision/00-base.sh failed"},
		{"a failure is not overwritten", "00-base.sh 1\n00-base.sh 0\n10-packages.sh 0\n90-done.sh 0\n", "00-base.sh failed (exit status 1)"},
		{"escapes", "00-base.sh 0\x1b[2J\n10-packages.sh 0\n90-done.sh 0\n", "00-base.sh failed"},
	} {
		err := CheckProvision([]byte(c.out), steps)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
		var se *StepError
		if err != nil && !errors.As(err, &se) {
			t.Errorf("%s: %T is not a *StepError", c.name, err)
		}
	}
}

// TestProvisionStepsAreTheScripts: every guest/provision script is a step,
// in order.
func TestProvisionStepsAreTheScripts(t *testing.T) {
	steps := ProvisionSteps()
	if len(steps) < 10 || steps[0] != "00-base.sh" || steps[len(steps)-1] != "90-done.sh" {
		t.Fatalf("steps %v", steps)
	}
}

// TestRefusal is the message of a refused golden: the image, the step,
// and the kept boot log in the hint.
func TestRefusal(t *testing.T) {
	err := refusal("golden-0123456789ab", &StepError{Step: "guest/provision/30-agent.sh", Status: 1}, "/home/me/.corral/logs/golden-0123456789ab-boot.log")
	if got, want := err.Error(), "golden image golden-0123456789ab not kept: provision step guest/provision/30-agent.sh failed (exit status 1)"; got != want {
		t.Errorf("error %q, want %q", got, want)
	}
	if got, want := hint.Of(err), "the boot log, with every step's output, is kept at /home/me/.corral/logs/golden-0123456789ab-boot.log; fix what the step needs (the packages, toolchains or agent it installs, or the image), then run the command again"; got != want {
		t.Errorf("hint %q, want %q", got, want)
	}
	var se *StepError
	if !errors.As(err, &se) || se.Step != "guest/provision/30-agent.sh" {
		t.Errorf("the step is not in the error chain: %v", err)
	}
	if h := hint.Of(refusal("golden-x", &StepError{Step: "s", Status: -1}, "")); !strings.Contains(h, "could not be kept") {
		t.Errorf("no log: hint %q", h)
	}
}
