package golden

import (
	"bufio"
	"bytes"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/corral-dev/corral/core/atomicfile"
	"github.com/corral-dev/corral/core/display"
	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/lima"
	"github.com/corral-dev/corral/core/untrusted"
	"github.com/corral-dev/corral/guest"
)

// maxRecord caps the guest's record of its provision steps as read back:
// a line per step, a dozen steps.
const maxRecord = 16 << 10

// StepError is a provision step the guest's own record shows failed, or
// that left no record (it did not run to its end).
type StepError struct {
	// Step is the script, as the repository names it
	// ("guest/provision/30-agent.sh").
	Step string
	// Status is its exit status; -1 when it left no record.
	Status int
}

func (e *StepError) Error() string {
	if e.Status < 0 {
		return fmt.Sprintf("provision step %s left no record (it did not run to its end)", e.Step)
	}
	return fmt.Sprintf("provision step %s failed (exit status %d)", e.Step, e.Status)
}

// CheckProvision reads the guest's record of its provision steps (the
// output of guest.ProvisionRecord: "NAME STATUS" lines) and returns the
// first of steps, in order, that failed or left no record, as a
// *StepError; nil when every step recorded exit status 0. The output is
// the guest's (hostile): lines that are not a known step with a number
// are ignored, and a step recorded twice counts as failed unless both say
// 0.
func CheckProvision(out []byte, steps []string) error {
	status := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 512), maxRecord)
	for sc.Scan() {
		name, code, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(code)
		if err != nil || n < 0 || n > 255 {
			n = 255 // a record that is not a status is no success
		}
		if prev, seen := status[name]; seen && prev != 0 {
			continue
		}
		status[name] = n
	}
	for _, s := range steps {
		n, ok := status[s]
		switch {
		case !ok:
			return &StepError{Step: "guest/provision/" + s, Status: -1}
		case n != 0:
			return &StepError{Step: "guest/provision/" + s, Status: n}
		}
	}
	return nil
}

// ProvisionSteps are the steps every boot records: the file names of the
// guest/provision scripts, in the order they run.
func ProvisionSteps() []string {
	var out []string
	for _, s := range guest.Provision() {
		out = append(out, s.Name)
	}
	return out
}

// refusal is the error of a golden build whose provisioning failed: the
// image is not kept, and the hint names the step's log.
func refusal(name string, err error, log string) error {
	const fix = "fix what the step needs (the packages, toolchains or agent it installs, or the image), then run the command again"
	h := "the boot log, with every step's output, is kept at " + display.Text(log, 0) + "; " + fix
	if log == "" {
		h = "its boot log could not be kept; " + fix
	}
	return hint.New(fmt.Errorf("golden image %s not kept: %w", name, err), h)
}

// keepLog copies the end of a golden's console log (each step's output is
// there) to the logs directory before the image is deleted, and returns
// its path, or "" when there is none. The log is the guest's: it is read
// capped and copied as bytes, never shown.
func (im Images) keepLog(name string) string {
	for _, vm := range []string{"qemu", "vz"} {
		b, err := untrusted.ReadTail(lima.ConsoleLog(im.Layout.LimaHome(), name, vm), consoleTail)
		if err != nil {
			continue
		}
		dst := filepath.Join(im.Layout.LogsDir(), name+"-boot.log")
		if err := atomicfile.WriteFile(dst, b, 0o600); err != nil {
			im.logger().Warn("keeping the golden's boot log", "golden", name, "err", err)
			return ""
		}
		return dst
	}
	return ""
}

// consoleTail is how much of the end of a console log keepLog copies.
const consoleTail = 1 << 20
