// Command corral-guest-conn is `corral guest-conn BOX` alone: qemu runs it
// once per guest connection to the broker (the host funnel), and a program
// that links only the standard library and core/paths starts in a fraction
// of corral's time. It takes the same arguments as corral, so
// `corral-guest-conn guest-conn BOX` and `corral guest-conn BOX` are the
// same command; see core/guestconn.
package main

import (
	"os"

	"github.com/corral-dev/corral/core/guestconn"
)

func main() { os.Exit(guestconn.Main(os.Args[1:])) }
