package toolreg

import (
	"strings"
	"testing"
)

// A deeply nested cargo config is refused before the TOML parser, which
// takes minutes on 60,000 open brackets.
func TestCargoNestingRefused(t *testing.T) {
	for _, body := range []string{"a = " + strings.Repeat("[", 60000), "a = " + strings.Repeat("{b=", 20000), strings.Repeat("[a.", 20000) + "b]"} {
		rec, err := ParseBytes([]byte(header + "\n@cargo /x\n| " + body + "\n"))
		if err != nil || len(rec.Registries) != 0 || len(rec.Notes) == 0 {
			t.Errorf("%.20s...: %+v, %v", body, rec, err)
		}
	}
}
