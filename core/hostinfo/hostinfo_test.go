package hostinfo

import "testing"

func TestRead(t *testing.T) {
	h, err := Read()
	if err != nil {
		t.Fatal(err)
	}
	if h.MemoryBytes < 64<<20 || h.CPUs < 1 {
		t.Fatalf("implausible host: %+v", h)
	}
}
