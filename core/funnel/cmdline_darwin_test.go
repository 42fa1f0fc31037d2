package funnel

import (
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
	if _, err := parseProcargs2(b[:10]); err == nil {
		t.Error("truncated: no error")
	}
}
