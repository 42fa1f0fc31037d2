package broker

import "strings"

// The command line of a box's broker is a contract between three parties:
// core/box starts `corral broker --box BOX --listen ADDR` and later
// recognises it among running processes (to stop it, or to find the brokers
// of deleted boxes), and the CLI parses it into Options. It lives with the
// broker; core/box imports this package for it (this package never imports
// core/box: cmd/corral/deps_test.go holds it to that).

// Command is the corral subcommand that runs a broker.
const Command = "broker"

// The flags of Command that the contract uses (without the dashes).
const (
	FlagBox    = "box"
	FlagListen = "listen"
)

// Args are what a box's broker is started with.
type Args struct {
	Box    string // the box served
	Listen string // the loopback address listened on, such as 127.0.0.1:42001
}

// Argv returns the arguments, after the executable, that run a's
// broker.
func Argv(a Args) []string {
	return []string{Command, "--" + FlagBox, a.Box, "--" + FlagListen, a.Listen}
}

// ParseArgv reads the argv of a process (argv[0] is the executable):
// the arguments of a `corral broker --box BOX` as Argv writes them
// (either flag also as --flag=value, in any order), or false for any other
// process, including a standalone broker without --box.
func ParseArgv(argv []string) (Args, bool) {
	if len(argv) < 3 || argv[1] != Command {
		return Args{}, false
	}
	var a Args
	flags := map[string]*string{FlagBox: &a.Box, FlagListen: &a.Listen}
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
