package box

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"sync"

	"github.com/corral-dev/corral/core/lima"
	"github.com/corral-dev/corral/core/limayaml"
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

// provisionFailure reports the first failed provision script of the
// current boot of box under the VM driver vmType, or nil.
func (s *Service) provisionFailure(box, vmType string, r limayaml.Rendered) error {
	log := lima.ConsoleLog(s.Layout.LimaHome(), box, vmType)
	f, err := os.Open(log)
	if err != nil {
		return nil // no console log: nothing to read
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		m := failedRe().FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		name := m[1] + " script " + m[2]
		if i, err := strconv.Atoi(m[2]); err == nil && i < len(r.Provision) {
			name = r.Provision[i]
		}
		return &ProvisionError{Box: box, Script: name, Log: log}
	}
	return nil
}
