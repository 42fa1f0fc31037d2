package cli

import (
	"bytes"
	"testing"
)

func TestTable(t *testing.T) {
	for _, c := range []struct {
		tty  bool
		want string
	}{
		{true, "BOX         STATE\nweb-3f2a1c  Running\na           Stopped x\n"},
		{false, "BOX\tSTATE\nweb-3f2a1c\tRunning\na\tStopped x\n"},
	} {
		var b bytes.Buffer
		tb := newTable(&b, c.tty)
		tb.Row("BOX", "STATE")
		tb.Row("web-3f2a1c", "Running")
		tb.Row("a", "Stopped\tx") // a tab in a field cannot make a column
		if err := tb.Flush(); err != nil || b.String() != c.want {
			t.Errorf("tty %v: %q, %v; want %q", c.tty, b.String(), err, c.want)
		}
	}
}
