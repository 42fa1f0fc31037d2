// Command corral gives each project its own Lima VM to run coding agents in.
// One binary, five modes, chosen here and nowhere else: under the name
// qemu-system-<arch> it is the qemu wrapper Lima runs for corral's boxes
// (core/qemuwrap); `corral guest-conn BOX` is what that qemu runs per guest
// connection (core/guestconn, with no command tree), `corral host-conn BOX
// PORT` per connection to a named host port (core/funnel, the same); `corral
// qemu-name-rule` is the supervisor that wrapper starts beside qemu
// (core/namerule); everything else is the
// CLI (cmd/corral/cli), whose `corral app` is the menu-bar app and whose
// `corral broker` is a box's egress broker (core/broker).
package main

import (
	"os"

	"github.com/corral-dev/corral/cmd/corral/cli"
	"github.com/corral-dev/corral/core/funnel"
	"github.com/corral-dev/corral/core/guestconn"
	"github.com/corral-dev/corral/core/namerule"
	"github.com/corral-dev/corral/core/qemuwrap"
)

func main() { os.Exit(run(os.Args)) }

// run picks the mode argv asks for and returns its exit code.
func run(argv []string) int {
	switch {
	case len(argv) > 0 && qemuwrap.Is(argv[0]):
		return qemuwrap.Main(argv)
	case len(argv) > 1 && argv[1] == guestconn.Command:
		return guestconn.Main(argv[1:])
	case len(argv) > 1 && argv[1] == funnel.BridgeCommandName:
		return funnel.HostConnMain(argv[2:])
	case len(argv) > 1 && argv[1] == namerule.Command:
		return qemuwrap.NameRuleMain(argv[2:])
	}
	return cli.Main(argv, appMain)
}
