package box

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/corral-dev/corral/core/display"
	"github.com/corral-dev/corral/core/lima"
	"github.com/corral-dev/corral/core/limayaml"
	"github.com/corral-dev/corral/core/untrusted"
)

// Lima runs every provision script even after one fails, logs
// "Failed to execute /mnt/lima-cidata/provision.<mode>/<index>" on the
// guest console, and still reports the box as ready. corral reads the
// console log of the current boot (lima.ConsoleLog: each driver writes its
// own and truncates it at every start) and refuses a box whose
// provisioning failed.
var failedRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`Failed to execute /mnt/lima-cidata/provision\.(system|user)/(\d+)`)
})

// ProvisionError names a provision script that failed in the box.
type ProvisionError struct {
	Box, Script, Log string
}

func (e *ProvisionError) Error() string {
	return fmt.Sprintf("provisioning box %s failed in %s", e.Box, e.Script)
}

// Hint says where the boot log is and what to do.
func (e *ProvisionError) Hint() string { return provisionHint(e.Log) }

func provisionHint(log string) string {
	return fmt.Sprintf("the boot log is %s; fix the script or config, then corral rebuild", log)
}

// consoleTail is how much of the end of the console log provisionFailure
// reads. The guest writes the log: its size is the guest's to choose, and
// the failure lines of the provision scripts come last in a boot.
const consoleTail = 1 << 20

// provisionFailure reports the first failed provision script of the
// current boot of box under the VM driver vmType, or nil.
//
// The console log is hostile (the guest writes every byte of it): it is
// read through core/untrusted (a regular file, only its last consoleTail
// bytes), and a script name taken from it rather than from r is escaped
// by core/display, because it ends up in an error shown to the user.
func (s *Service) provisionFailure(box, vmType string, r limayaml.Rendered) error {
	log := lima.ConsoleLog(s.Layout.LimaHome(), box, vmType)
	b, err := untrusted.ReadTail(log, consoleTail)
	if err != nil {
		return nil // no console log, or not a file one can read: nothing to read
	}
	text := string(b)
	if len(b) == consoleTail {
		// Most likely cut: drop the partial first line.
		if _, rest, ok := strings.Cut(text, "\n"); ok {
			text = rest
		}
	}
	for line := range strings.SplitSeq(text, "\n") {
		m := failedRe().FindStringSubmatch(line)
		if m == nil {
			continue
		}
		name := display.Text(m[1]+" script "+m[2], 0)
		if i, err := strconv.Atoi(m[2]); err == nil && i < len(r.Provision) {
			name = r.Provision[i]
		}
		return &ProvisionError{Box: box, Script: name, Log: log}
	}
	return nil
}
