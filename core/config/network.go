package config

// Network is a box's network mode, the value of the network key. Config
// keeps the decoded string (validated against NetworkOrder, compared by rank
// in the trust policy); code that acts on the mode uses Network values.
type Network string

// The network modes, loosest first (NetworkOrder).
const (
	NetworkFull    Network = "full"    // no filter
	NetworkBroker  Network = "broker"  // only the host's allow-list proxy (the egress broker)
	NetworkOffline Network = "offline" // loopback only
)

// NetworkMode returns c's network mode, "" when unset.
func (c Config) NetworkMode() Network {
	if c.Network == nil {
		return ""
	}
	return Network(*c.Network)
}
