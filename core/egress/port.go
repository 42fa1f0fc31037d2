package egress

import "hash/fnv"

// Broker ports are taken from [BrokerPortMin, BrokerPortMax].
const (
	BrokerPortMin = 42000
	BrokerPortMax = 42999
)

// BrokerPort is the preferred broker port of a box: 42000 plus the FNV-1a
// hash of its name modulo 1000, so a box keeps its port across restarts.
func BrokerPort(box string) int {
	h := fnv.New32a()
	h.Write([]byte(box))
	return BrokerPortMin + int(h.Sum32()%(BrokerPortMax-BrokerPortMin+1))
}

// IsBrokerPort reports whether p is in the broker port range. No box reaches
// such a port on a host address, whatever its ranges allow, so test
// upstreams on loopback must listen outside it (see [Server]).
func IsBrokerPort(p int) bool { return p >= BrokerPortMin && p <= BrokerPortMax }

// PickPort returns BrokerPort(box), or if inUse says it is taken the next
// free port, wrapping within 42000-42999. It returns 0 if all are in use.
func PickPort(box string, inUse func(int) bool) int {
	n := BrokerPortMax - BrokerPortMin + 1
	start := BrokerPort(box) - BrokerPortMin
	for i := range n {
		p := BrokerPortMin + (start+i)%n
		if !inUse(p) {
			return p
		}
	}
	return 0
}
