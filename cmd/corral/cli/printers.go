package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/corral-dev/corral/core/display"
)

// printJSON is --json's one printer: v as one JSON document, indented by
// two spaces, then a newline. Commands whose --json is a stream (a log,
// one JSON line per entry) encode line by line instead.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(dataOut(w))
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table is the one table rule (as cli/cli's table printer): columns
// aligned with two spaces for a terminal, one row per line with fields
// separated by a tab otherwise, so that scripts can cut and awk them. A
// field never holds a tab or a newline of its own: they would break rows
// and columns, so they are printed as spaces. Every field then goes
// through display.Text (capped at maxCell runes): a cell is where a box
// name, a path or a config value is shown, so the table sanitises them
// all and a command cannot forget one.
type table struct {
	w   io.Writer
	tw  *tabwriter.Writer // nil when not a terminal
	err error
}

// newTable starts a table on w; tty says whether w is a terminal.
func newTable(w io.Writer, tty bool) *table {
	t := &table{w: w}
	if tty {
		t.tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	}
	return t
}

// maxCell caps a table field, in runes: a long project path still shows
// whole.
const maxCell = 1024

var fieldCleaner = strings.NewReplacer("\t", " ", "\n", " ", "\r", " ")

// Row adds one row.
func (t *table) Row(fields ...any) {
	parts := make([]string, len(fields))
	for i, f := range fields {
		parts[i] = display.Text(fieldCleaner.Replace(fmt.Sprint(f)), maxCell)
	}
	out := t.w
	if t.tw != nil {
		out = t.tw
	}
	if _, err := fmt.Fprintln(out, strings.Join(parts, "\t")); err != nil && t.err == nil {
		t.err = err
	}
}

// Flush writes out an aligned table and reports the first write error.
func (t *table) Flush() error {
	if t.tw != nil {
		if err := t.tw.Flush(); err != nil && t.err == nil {
			t.err = err
		}
	}
	return t.err
}

// warnLines prints head, then every problem of err (a joined error is
// split) on its own indented line, each line of it through display.Text:
// an error names files and values that came from a repository.
func warnLines(w io.Writer, head string, err error) {
	fmt.Fprintln(w, head)
	for _, e := range violations(err) {
		for _, line := range strings.Split(e.Error(), "\n") {
			if line != "" {
				fmt.Fprintln(w, "  "+display.Text(line, maxCell))
			}
		}
	}
}

// textLines is s for display as lines: every line through display.Text,
// joined by a newline and indent, so that a value cannot start a line of
// its own at the left margin.
func textLines(s, indent string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = display.Text(l, maxCell)
	}
	return strings.Join(lines, "\n"+indent)
}
