package config

import (
	"slices"
	"time"
)

// Network is a box's network mode, the value of the network key (ranked
// by NetworkOrder in the trust policy).
type Network string

// The network modes, loosest first (NetworkOrder).
const (
	NetworkFull Network = "full" // no filter
	// NetworkLearn is broker mode whose broker, for learn_for after the
	// learning began, also allows public destinations off the allow-list
	// and logs them, so that `corral egress learn` can propose an
	// allow-list. For the VM, the funnel and the broker process it is
	// NetworkBroker (see Settings.NetworkMode).
	NetworkLearn   Network = "learn"
	NetworkBroker  Network = "broker"  // only the host's allow-list proxy (the egress broker)
	NetworkOffline Network = "offline" // loopback only
)

// DefaultLearnFor is how long learning lasts unless learn_for says.
const DefaultLearnFor = 30 * time.Minute

// MaxLearnFor bounds learn_for: learning is a first run, not a mode to
// live in.
const MaxLearnFor = 24 * time.Hour

// looserThanBroker reports whether network value v ranks below broker.
func looserThanBroker(v Network) bool {
	return slices.Index(NetworkOrder, string(v)) < slices.Index(NetworkOrder, string(NetworkBroker))
}
