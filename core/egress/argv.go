package egress

import "strings"

// The command line of a box's broker is a contract between three parties:
// core/box starts `corral broker --box BOX --listen ADDR` and later
// recognises it among running processes (to stop it, or to find the brokers
// of deleted boxes), and the CLI parses it. It lives here, below all of
// them, because core/broker (the broker's lifecycle) imports core/box.

// BrokerCommand is the corral subcommand that runs a broker.
const BrokerCommand = "broker"

// The flags of BrokerCommand that the contract uses (without the dashes).
const (
	BrokerFlagBox    = "box"
	BrokerFlagListen = "listen"
)

// BrokerArgs are what a box's broker is started with.
type BrokerArgs struct {
	Box    string // the box served
	Listen string // the loopback address listened on, such as 127.0.0.1:42001
}

// BrokerArgv returns the arguments, after the executable, that run a's
// broker.
func BrokerArgv(a BrokerArgs) []string {
	return []string{BrokerCommand, "--" + BrokerFlagBox, a.Box, "--" + BrokerFlagListen, a.Listen}
}

// ParseBrokerArgv reads the argv of a process (argv[0] is the executable):
// the arguments of a `corral broker --box BOX` as BrokerArgv writes them
// (either flag also as --flag=value, in any order), or false for any other
// process, including a standalone broker without --box.
func ParseBrokerArgv(argv []string) (BrokerArgs, bool) {
	if len(argv) < 3 || argv[1] != BrokerCommand {
		return BrokerArgs{}, false
	}
	var a BrokerArgs
	flags := map[string]*string{BrokerFlagBox: &a.Box, BrokerFlagListen: &a.Listen}
	for i := 2; i < len(argv); i++ {
		name, value, hasValue := strings.Cut(strings.TrimPrefix(argv[i], "--"), "=")
		dst, ok := flags[name]
		if !ok || !strings.HasPrefix(argv[i], "--") {
			continue
		}
		if !hasValue {
			if i+1 >= len(argv) {
				break
			}
			i++
			value = argv[i]
		}
		*dst = value
	}
	return a, a.Box != ""
}
