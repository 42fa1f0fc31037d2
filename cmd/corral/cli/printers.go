package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// printJSON is --json's one printer: v as one JSON document, indented by
// two spaces, then a newline. Commands whose --json is a stream (a log,
// one JSON line per entry) encode line by line instead.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table is the one table rule (as cli/cli's table printer): columns
// aligned with two spaces for a terminal, one row per line with fields
// separated by a tab otherwise, so that scripts can cut and awk them. A
// field never holds a tab or a newline of its own: they would break rows
// and columns, so they are printed as spaces.
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

var fieldCleaner = strings.NewReplacer("\t", " ", "\n", " ", "\r", " ")

// Row adds one row.
func (t *table) Row(fields ...any) {
	parts := make([]string, len(fields))
	for i, f := range fields {
		parts[i] = fieldCleaner.Replace(fmt.Sprint(f))
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
