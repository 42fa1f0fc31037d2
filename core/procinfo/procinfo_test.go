package procinfo

import (
	"os"
	"slices"
	"testing"
)

func TestParseProcargs2(t *testing.T) {
	b := []byte{3, 0, 0, 0}
	b = append(b, "/opt/homebrew/bin/qemu-system-aarch64\x00\x00\x00\x00"...)
	b = append(b, "qemu-system-aarch64\x00-netdev\x00user,id=net0,restrict=on\x00HOME=/Users/x\x00"...)
	got, err := parseProcargs2(b)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"qemu-system-aarch64", "-netdev", "user,id=net0,restrict=on"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	env, err := parseProcargs2Env(append(b, "CORRAL_HOME=/Users/x/.corral\x00\x00\x00ptr_munge=\x00"...))
	if want := []string{"HOME=/Users/x", "CORRAL_HOME=/Users/x/.corral"}; err != nil || !slices.Equal(env, want) {
		t.Errorf("env %q, %v; want %q", env, err, want)
	}
	for _, bad := range [][]byte{b[:10], b[:2], {0xff, 0xff, 0xff, 0x7f, 'x', 0, 'a', 0}} {
		if _, err := parseProcargs2(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func FuzzParseProcargs2(f *testing.F) {
	f.Add([]byte{2, 0, 0, 0, '/', 'x', 0, 0, 'a', 0, 'b', 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		args, err := parseProcargs2(b)
		if err == nil && len(args) > len(b) {
			t.Fatalf("%d args from %d bytes", len(args), len(b))
		}
	})
}

func TestParseStatStart(t *testing.T) {
	// A command name with spaces and parentheses must not shift the fields.
	stat := []byte("4242 (corral (x) y) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 3 0 987654 1000000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0")
	got, err := parseStatStart(stat)
	if err != nil || got != 987654 {
		t.Fatalf("parseStatStart = %d, %v; want 987654", got, err)
	}
	for _, bad := range []string{"", "4242 corral S 1", "4242 (c) S 1 2 3", "4242 (c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 3 0 x"} {
		if _, err := parseStatStart([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// The test process reads itself: the identity is stable across reads.
func TestReadSelf(t *testing.T) {
	a, err := Read(os.Getpid())
	if err != nil {
		t.Skip("no process identity here:", err)
	}
	b, err := Read(os.Getpid())
	if err != nil || a.Start == 0 || a.Start != b.Start || !slices.Equal(a.Argv, os.Args) {
		t.Fatalf("Read = %+v then %+v, %v; argv want %q", a, b, err, os.Args)
	}
	if !Same(b, a.Start) || Same(Identity{Start: a.Start + 1}, a.Start) || !Same(b, 0) {
		t.Error("Same disagrees")
	}
}
