package toolreg

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-dev/corral/core/display"
	"github.com/corral-dev/corral/core/egress"
)

// FuzzParse: whatever a golden prints, Parse never panics, keeps its caps,
// records only allow-list entries that name a host (never an IP literal),
// and its notes are safe to display.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.txt")
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(header + "\n@apt x.sources\n| URIs: https://a.example\n|  https://b.example\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := ParseBytes(b)
		if err != nil {
			return
		}
		if len(rec.Registries) > MaxEntries || len(rec.Notes) > MaxNotes {
			t.Fatalf("%d entries, %d notes", len(rec.Registries), len(rec.Notes))
		}
		for _, g := range rec.Registries {
			if _, err := egress.ParsePolicy([]string{g.Entry}, nil); err != nil {
				t.Fatalf("entry %q: %v", g.Entry, err)
			}
			host := g.Entry
			if i := strings.LastIndexByte(host, ':'); i >= 0 {
				host = host[:i]
			}
			if _, err := netip.ParseAddr(host); err == nil || strings.ContainsAny(g.Entry, "*/@[] ") {
				t.Fatalf("entry %q is not a host name", g.Entry)
			}
			if display.Text(g.Source, maxSource) != g.Source {
				t.Fatalf("source %q is not sanitised", g.Source)
			}
		}
		for _, n := range rec.Notes {
			if display.Text(n, 300) != n {
				t.Fatalf("note %q is not sanitised", n)
			}
		}
	})
}
