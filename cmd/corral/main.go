// Command corral gives each project its own Lima VM to run coding agents in.
// The same binary is the CLI, the menu-bar app (`corral app`) and, under the
// name qemu-system-<arch>, the qemu wrapper Lima runs for corral's boxes.
package main

import (
	"os"

	"github.com/corral-dev/corral/app"
	"github.com/corral-dev/corral/cmd/corral/cli"
)

func main() { os.Exit(cli.Main(os.Args, app.Main)) }
