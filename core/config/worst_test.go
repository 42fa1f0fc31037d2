package config

import (
	"fmt"
	"strings"
	"testing"
)

// worstCases are files at the size cap built to make the parser or the
// strict decoder work hard: many keys, many unknown keys, wide implicit
// tables, long arrays, nesting and dotted keys just under the cap.
func worstCases() map[string]string {
	fill := func(line func(i int) string) string {
		var b strings.Builder
		for i := 0; b.Len() < MaxFileSize-64; i++ {
			b.WriteString(line(i))
		}
		return b.String()
	}
	deep := strings.Repeat("[", MaxNesting) + strings.Repeat("]", MaxNesting)
	dotted := strings.Repeat("a.", MaxNesting-2) + "b"
	return map[string]string{
		"env keys":      "[env]\n" + fill(func(i int) string { return fmt.Sprintf("V%d = \"x\"\n", i) }),
		"unknown keys":  fill(func(i int) string { return fmt.Sprintf("K%d = 1\n", i) }),
		"wide implicit": fill(func(i int) string { return fmt.Sprintf("[X.k%d]\n", i) }),
		"long array":    "egress = [" + fill(func(int) string { return "\"a.test\"," }) + "]\n",
		"deep arrays":   fill(func(i int) string { return fmt.Sprintf("k%d = %s\n", i, deep) }),
		"dotted keys":   fill(func(i int) string { return fmt.Sprintf("%s%d = 1\n", dotted, i) }),
		"dotted header": fill(func(i int) string { return fmt.Sprintf("[%s%d]\n", dotted, i) }),
		"keychain":      fill(func(i int) string { return fmt.Sprintf("[keychain_env.N%d]\nSERVICE = 1\n", i) }),
	}
}

// TestWorstCaseFiles parses each worst case; each must be refused or
// accepted as a whole, never crash. BenchmarkWorstCaseFiles measures them.
func TestWorstCaseFiles(t *testing.T) {
	for name, data := range worstCases() {
		t.Run(name, func(t *testing.T) {
			if len(data) > MaxFileSize {
				t.Fatalf("case is %d bytes, over the cap", len(data))
			}
			l, err := Parse(KindProject, "p.toml", []byte(data))
			if err == nil && len(l.Set) == 0 && name != "wide implicit" {
				t.Logf("accepted with nothing set")
			}
			if err != nil && len(err.Error()) > 64<<10 {
				t.Errorf("error is %d bytes long", len(err.Error()))
			}
		})
	}
}

func BenchmarkWorstCaseFiles(b *testing.B) {
	for name, data := range worstCases() {
		b.Run(strings.ReplaceAll(name, " ", "-"), func(b *testing.B) {
			for b.Loop() {
				_, _ = Parse(KindProject, "p.toml", []byte(data))
			}
		})
	}
}
