// Command corral gives each project its own Lima VM to run coding agents in.
package main

import (
	"os"

	"github.com/corral-dev/corral/cmd/corral/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
