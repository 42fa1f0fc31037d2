package egress

import (
	"errors"
	"testing"
)

func TestParseAuthority(t *testing.T) {
	tests := []struct {
		in      string
		defPort int
		want    string // canonical String(); "" means error
		reason  Reason
	}{
		{"example.test:443", 0, "example.test:443", ""},
		{"EXAMPLE.Test.:8080", 0, "example.test:8080", ""},
		{"example.test", 80, "example.test:80", ""},
		{"example.test", 0, "", ReasonMalformedAuthority},
		{"bücher.test:443", 0, "xn--bcher-kva.test:443", ""},
		{"BÜCHER.test:443", 0, "xn--bcher-kva.test:443", ""},
		{"xn--bcher-kva.test:443", 0, "xn--bcher-kva.test:443", ""},
		{"under_score.test:1", 0, "under_score.test:1", ""},
		{"127.0.0.1:22", 0, "127.0.0.1:22", ""},
		{"[::1]:443", 0, "[::1]:443", ""},
		{"[::1]", 80, "[::1]:80", ""},
		{"[::ffff:127.0.0.1]:80", 0, "[::ffff:127.0.0.1]:80", ""},
		{"::1:443", 0, "", ReasonMalformedAuthority},
		{"[fe80::1%eth0]:443", 0, "", ReasonMalformedAuthority},
		{"[127.0.0.1]:443", 0, "", ReasonMalformedAuthority},
		{"user@example.test:443", 0, "", ReasonUserinfo},
		{"user:pw@example.test:443", 0, "", ReasonUserinfo},
		{"example.test:0", 0, "", ReasonMalformedAuthority},
		{"example.test:65536", 0, "", ReasonMalformedAuthority},
		{"example.test:+443", 0, "", ReasonMalformedAuthority},
		{"example.test:", 0, "", ReasonMalformedAuthority},
		{":443", 0, "", ReasonMalformedAuthority},
		{"", 80, "", ReasonMalformedAuthority},
		{"exa mple.test:443", 0, "", ReasonMalformedAuthority},
		{"a..test:443", 0, "", ReasonMalformedAuthority},
		{".test:443", 0, "", ReasonMalformedAuthority},
		{"example.test/path:443", 0, "", ReasonMalformedAuthority},
		{"127.1:80", 0, "", ReasonMalformedAuthority},
		{"0x7f.1:80", 0, "", ReasonMalformedAuthority},
		{"1.2.3.4.5:80", 0, "", ReasonMalformedAuthority},
		{"010.0.0.1:80", 0, "", ReasonMalformedAuthority},
		{"[::1]x:80", 0, "", ReasonMalformedAuthority},
		{"xn--zz.test:443", 0, "", ReasonMalformedAuthority},
		{"-x.test:443", 0, "", ReasonMalformedAuthority},
		{"x-.test:443", 0, "", ReasonMalformedAuthority},
		{"a.-b.test:443", 0, "", ReasonMalformedAuthority},
		{"a-b.test:443", 0, "a-b.test:443", ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			a, err := ParseAuthority(tt.in, tt.defPort)
			if tt.want == "" {
				var ae *AuthorityError
				if !errors.As(err, &ae) {
					t.Fatalf("ParseAuthority(%q) = %v, %v; want *AuthorityError", tt.in, a, err)
				}
				if ae.Reason != tt.reason {
					t.Fatalf("reason = %q, want %q", ae.Reason, tt.reason)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseAuthority(%q): %v", tt.in, err)
			}
			if got := a.String(); got != tt.want {
				t.Fatalf("ParseAuthority(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
