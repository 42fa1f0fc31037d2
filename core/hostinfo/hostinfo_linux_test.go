package hostinfo

import "testing"

func TestMemAvailable(t *testing.T) {
	got, err := memAvailable([]byte("MemTotal:       24576000 kB\nMemFree:         1000 kB\nMemAvailable:    2097152 kB\nBuffers: 1 kB\n"))
	if err != nil || got != 2<<30 {
		t.Errorf("memAvailable = %d, %v; want 2 GiB", got, err)
	}
	for _, bad := range []string{"MemTotal: 1 kB\n", "MemAvailable: x kB\n", "MemAvailable: 12 MB\n", "MemAvailable: 99999999999999999 kB\n", ""} {
		if n, err := memAvailable([]byte(bad)); err == nil {
			t.Errorf("%q: %d, no error", bad, n)
		}
	}
}

func TestAvailable(t *testing.T) {
	h, err := Read()
	if err != nil {
		t.Fatal(err)
	}
	a, err := Available()
	if err != nil || a == 0 || a > h.MemoryBytes {
		t.Errorf("Available = %d, %v (RAM %d)", a, err, h.MemoryBytes)
	}
}
