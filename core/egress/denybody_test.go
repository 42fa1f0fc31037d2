package egress

import "testing"

// TestDenyBodyNamesTheRequestChannel: the client of a denial is a program
// in the box, which cannot run corral: the body names corral-request
// first (what it can do), then what the user can do on the host.
func TestDenyBodyNamesTheRequestChannel(t *testing.T) {
	s := &Server{cfg: Config{Box: "web-3f2a1c"}}
	for _, c := range []struct {
		name string
		t    target
		want string
	}{
		{"host", target{auth: Authority{Host: "registry.example.test", Port: 443}, d: Decision{Reason: ReasonHostNotAllowed}},
			"corral: egress to registry.example.test:443 denied (host-not-allowed)\n" +
				"to ask the user for it from inside the box: corral-request registry.example.test --why \"what it is for\"\n" +
				"  (then retry the same command: it waits up to a minute for the answer; do not try other hosts to get around a refusal)\n" +
				"the user can allow it on the host: corral allow web-3f2a1c registry.example.test\n"},
		{"port", target{auth: Authority{Host: "api.example.test", Port: 8443}, d: Decision{Reason: ReasonPortNotAllowed}},
			"corral: egress to api.example.test:8443 denied (port-not-allowed)\n" +
				"to ask the user for it from inside the box: corral-request api.example.test:8443 --why \"what it is for\"\n" +
				"  (then retry the same command: it waits up to a minute for the answer; do not try other hosts to get around a refusal)\n" +
				"the user can allow it on the host: corral allow web-3f2a1c api.example.test:8443\n"},
		{"self", target{auth: Authority{Host: "127.0.0.1", Port: 42123}, d: Decision{Reason: ReasonSelf}},
			"corral: egress to 127.0.0.1:42123 denied (self)\n" +
				"that is the egress broker itself or another corral socket on this host; no range opens it\n"},
	} {
		if got := s.denyBody(c.t); got != c.want {
			t.Errorf("%s:\n%s\nwant\n%s", c.name, got, c.want)
		}
	}
}
