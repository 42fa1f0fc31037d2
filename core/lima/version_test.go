package lima

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestParseVersion(t *testing.T) {
	tests := []struct {
		in      string
		want    Version
		wantErr bool
	}{
		{"limactl version 1.2.2\n", Version{1, 2, 2, ""}, false},
		{"limactl version 2.0.0-beta.0", Version{2, 0, 0, "beta.0"}, false},
		{"1.10.3", Version{1, 10, 3, ""}, false},
		{"v1.0.7", Version{1, 0, 7, ""}, false},
		{"limactl version <unknown>", Version{}, true},
		{"", Version{}, true},
		{"limactl version garbage-1.2.3", Version{}, true},
	}
	for _, tt := range tests {
		got, err := ParseVersion(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseVersion(%q) = %v, %v; want %v, err=%v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestVersionLess(t *testing.T) {
	v := func(s string) Version {
		x, err := ParseVersion(s)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	for _, tt := range []struct {
		a, b string
		less bool
	}{
		{"1.1.9", "1.2.0", true},
		{"1.2.0", "1.2.0", false},
		{"1.2.2", "1.2.0", false},
		{"2.0.0-beta.0", "2.0.0", true},
		{"2.0.0", "2.0.0-beta.0", false},
		{"0.23.2", "1.2.0", true},
		{"1.10.0", "1.2.0", false},
	} {
		if got := v(tt.a).Less(v(tt.b)); got != tt.less {
			t.Errorf("%s < %s = %v, want %v", tt.a, tt.b, got, tt.less)
		}
	}
}

func TestCheckVersionWithFakeLimactl(t *testing.T) {
	ctx := context.Background()
	c := &Client{Limactl: "testdata/fake-limactl"}
	v, err := c.CheckVersion(ctx)
	if err != nil || v != (Version{1, 2, 2, ""}) {
		t.Errorf("CheckVersion = %v, %v", v, err)
	}
	t.Setenv("FAKE_LIMACTL_VERSION", "1.1.1")
	v, err = c.CheckVersion(ctx)
	if !errors.Is(err, ErrTooOld) || v != (Version{1, 1, 1, ""}) {
		t.Errorf("old: CheckVersion = %v, %v; want ErrTooOld", v, err)
	}
	var h interface{ Hint() string }
	if !errors.As(err, &h) || h.Hint() == "" {
		t.Errorf("old: no hint on %v", err)
	}
	t.Setenv("FAKE_LIMACTL_VERSION", "<unknown>")
	if _, err := c.CheckVersion(ctx); err == nil || errors.Is(err, ErrTooOld) {
		t.Errorf("unknown: err = %v, want a parse error", err)
	}
}

func TestFakeLimactlErrors(t *testing.T) {
	ctx := context.Background()
	c := &Client{Limactl: "testdata/fake-limactl", LimaHome: "/tmp/lh"}

	var le *Error
	for _, call := range []struct {
		name string
		err  error
		msg  string
	}{
		{"stop", c.Stop(ctx, "ghost", false), "open /tmp/lh/ghost/lima.yaml: no such file or directory"},
		{"clone", c.Clone(ctx, "ghost", "g2"), `instance "ghost" not found`},
		{"get", func() error { _, err := c.Get(ctx, "ghost"); return err }(), "No instance matching ghost found."},
	} {
		if !errors.Is(call.err, ErrNotFound) || !errors.As(call.err, &le) {
			t.Errorf("%s ghost: err = %v, want ErrNotFound *Error", call.name, call.err)
			continue
		}
		if le.Stderr != call.msg || le.ExitCode != 1 {
			t.Errorf("%s ghost: Stderr %q exit %d, want %q exit 1", call.name, le.Stderr, le.ExitCode, call.msg)
		}
	}
	if _, err := c.run(ctx, nil, "shell", "ghost", "true"); !errors.Is(err, ErrNotFound) {
		t.Errorf("shell ghost: err = %v, want ErrNotFound", err)
	}
	if err := c.Delete(ctx, "ghost", false); err != nil {
		t.Errorf("delete ghost: %v, want nil (limactl only warns)", err)
	}
	if insts, err := c.List(ctx); err != nil || len(insts) != 0 {
		t.Errorf("list with no instances = %v, %v", insts, err)
	}

	err := c.Delete(ctx, "running-one", false)
	if errors.Is(err, ErrNotFound) || !errors.As(err, &le) {
		t.Fatalf("delete running: err = %v", err)
	}
	if want := `failed to delete instance "running-one": expected status "Stopped", got "Running"`; le.Stderr != want {
		t.Errorf("delete running: Stderr = %q, want %q", le.Stderr, want)
	}

	// 1.2.2 exits 0 when qemu refuses savevm (9p mounted); SnapshotCreate must not report success.
	err = c.SnapshotCreate(ctx, "box1", "s1")
	if !errors.As(err, &le) || !strings.HasPrefix(le.Stderr, "Migration is disabled") || le.ExitCode != 0 {
		t.Errorf("snapshot create on running 9p instance: err = %v", err)
	}

	_, err = c.run(ctx, nil, "info")
	if !errors.Is(err, ErrRoot) {
		t.Errorf("info as root: err = %v, want ErrRoot", err)
	}

	// A non-logrus crash: the first stderr line.
	_, err = c.run(ctx, nil, "crash")
	if !errors.As(err, &le) || le.ExitCode != 2 || le.Stderr != "panic: runtime error: invalid memory address or nil pointer dereference" {
		t.Errorf("crash: %v", err)
	}
}

func TestStderrMessage(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{`time="t" level=info msg="x"` + "\n" + `time="t" level=fatal msg="boom \"q\""`, `boom "q"`},
		{`time="t" level=error msg=plain`, "plain"},
		{`time="t" level=warning msg="w"` + "\n" + "Error: raw line\n", "Error: raw line"},
		{"\n\n  first real line  \nsecond", "first real line"},
		{`time="t" level=fatal msg="unterminated`, "unterminated"},
	}
	for _, tt := range tests {
		if got := stderrMessage(tt.in); got != tt.want {
			t.Errorf("stderrMessage(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
