package config

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

// TestHostKey: host names a remote host (core/remote's name rule), only
// trusted layers may set it, and a repository that tries is a violation.
func TestHostKey(t *testing.T) {
	for _, kind := range []Kind{KindGlobal, KindTrusted} {
		l, err := Parse(kind, "t.toml", []byte(`host = "gpu-1"`))
		if err != nil {
			t.Fatal(err)
		}
		if errs := validate(l); len(errs) != 0 {
			t.Errorf("%s: refused: %v", kind, errs)
		}
		if l.Config.Host == nil || *l.Config.Host != "gpu-1" {
			t.Errorf("%s: decoded %v", kind, l.Config.Host)
		}
	}
	for _, v := range []string{"", "local", "-oProxyCommand=x", "GPU", "a b", "a\x1bb", "gpu.example", strings.Repeat("a", 33)} {
		l, err := Parse(KindTrusted, "t.toml", []byte("host = "+strconv.Quote(v)))
		if err != nil {
			t.Fatal(err)
		}
		if errs := validate(l); len(errs) != 1 || !strings.Contains(errs[0].Error(), "host") {
			t.Errorf("%q: %v, want one violation on host", v, errs)
		}
	}
	proj := newProject(t, []byte(`host = "gpu"`))
	_, err := Load(request(proj, ""))
	if !errors.Is(err, ErrViolation) || !strings.Contains(err.Error(), "host") {
		t.Errorf("a repository chose the host its box runs on: %v", err)
	}
}
