// Package egress is corral's per-box egress broker: an HTTP proxy on the
// host's loopback interface that decides which destinations a box (VM) may
// reach.
//
// The pieces are:
//
//   - [Policy]: an allow-list of exact hosts and *.suffix wildcards with
//     optional ports, plus explicit CIDR ranges that are the only way to
//     reach private, loopback or IP-literal destinations. [Policy.Decide]
//     returns a [Decision] carrying a stable reason code.
//   - [Server]: an HTTP CONNECT and absolute-URI HTTP forward proxy that
//     resolves a name once, classifies every address, and dials the address
//     it checked (no second lookup, so DNS rebinding cannot change the
//     destination after the check). Tunnels are spliced by the kernel.
//   - [DecisionLog] (opened with [OpenLog]): one JSON line per decision, plus
//     [ReadLog], [Summarize] and [Follow] for `corral egress` and the menu
//     bar app.
//   - [WatchFiles]: live reload of the policy when its files change.
//   - [UpstreamProxy]: an HTTP (CONNECT) or SOCKS5 proxy allowed
//     connections leave through, asked for the checked address only.
package egress
