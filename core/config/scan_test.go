package config

import (
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

func TestCheckNesting(t *testing.T) {
	deep := func(n int, open, close string) string {
		return "a = " + strings.Repeat(open, n) + strings.Repeat(close, n) + "\n"
	}
	for _, tc := range []struct {
		name string
		data string
		ok   bool
	}{
		{"flat", "a = 1\n", true},
		{"arrays at the cap", deep(MaxNesting-1, "[", "]"), true},
		{"arrays over the cap", deep(MaxNesting, "[", "]"), false},
		{"inline tables over the cap", "a = " + strings.Repeat("{b = ", MaxNesting) + "1" + strings.Repeat("}", MaxNesting), false},
		{"5000 inline tables", "a = " + strings.Repeat("{b = ", 5000) + "1" + strings.Repeat("}", 5000), false},
		{"dotted key over the cap", strings.Repeat("a.", MaxNesting) + "b = 1\n", false},
		{"dotted header over the cap", "[" + strings.Repeat("a.", MaxNesting) + "b]\n", false},
		{"header plus key plus arrays", "[" + strings.Repeat("a.", 10) + "b]\n" + strings.Repeat("c.", 10) + "d = " + strings.Repeat("[", 11) + strings.Repeat("]", 11), false},
		{"brackets in strings", `a = "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["` + "\n" + `b = '{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{'`, true},
		{"dots in strings", `a = "` + strings.Repeat(".", 100) + `"`, true},
		{"brackets in a comment", "a = 1 # " + strings.Repeat("[", 100), true},
		{"brackets in a multi-line string", "a = \"\"\"\n" + strings.Repeat("[", 100) + "\n\"\"\"\n", true},
		{"escaped quote does not end a string", `a = "\"` + strings.Repeat("[", 100) + `"`, true},
		{"a closing quote in a string does not hide brackets", `a = ["]]]]]]]]]]]]", ` + strings.Repeat("[", MaxNesting) + strings.Repeat("]", MaxNesting) + "]", false},
		{"floats in a list", "a = [" + strings.Repeat("1.5, ", 100) + "1.5]", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkNesting([]byte(tc.data), MaxNesting)
			if (err == nil) != tc.ok {
				t.Errorf("checkNesting = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

// depth is how deeply a decoded TOML value nests: tables and arrays count.
func depth(v any) int {
	d := 0
	switch v := v.(type) {
	case map[string]any:
		for _, c := range v {
			d = max(d, depth(c))
		}
		return d + 1
	case []map[string]any:
		for _, c := range v {
			d = max(d, depth(c))
		}
		return d + 1
	case []any:
		for _, c := range v {
			d = max(d, depth(c))
		}
		return d + 1
	}
	return 0
}

// FuzzCheckNesting: whatever passes the scan and parses nests no deeper
// than the cap (the top-level table counts as one level).
func FuzzCheckNesting(f *testing.F) {
	for _, s := range []string{
		"a = [[1]]", "[a.b]\nc.d = [[1]]", "[[a]]\nb = {c = [1]}", `a = "[["`, "a = '''\n[[\n'''",
		"x = [\n{a.b.c = 1},\n{d.e = 2}]\n", `"a.b".c = 1`, "[ a . b ]\nc = 1",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4096 || checkNesting(data, 8) != nil {
			return
		}
		var v map[string]any
		if _, err := toml.Decode(string(data), &v); err != nil {
			return
		}
		if d := depth(v); d > 8 {
			t.Fatalf("passed the scan at cap 8 but nests %d deep:\n%q", d, data)
		}
	})
}
