package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/display"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/review"
)

// The schema of every --json output, "corral.<kind>/v1" (docs/JSON.md
// lists them with their fields). A version changes only when a field is
// removed or changes meaning; new fields may appear in any version.
const (
	SchemaAgents         = "corral.agents/v1"
	SchemaApprovals      = "corral.approvals/v1"
	SchemaAuditEvent     = audit.Schema
	SchemaBoxes          = "corral.boxes/v1"
	SchemaBoxInfo        = "corral.box-info/v1"
	SchemaConfig         = "corral.config/v1"
	SchemaConfigCheck    = "corral.config-check/v1"
	SchemaDoctor         = "corral.doctor/v1"
	SchemaEgress         = "corral.egress/v1"
	SchemaEgressDecision = egress.DecisionSchema
	SchemaEgressGroups   = "corral.egress-groups/v1"
	SchemaEgressLearn    = "corral.egress-learn/v1"
	SchemaGCPlan         = "corral.gc-plan/v1"
	SchemaGCDone         = "corral.gc/v1"
	SchemaGoldens        = "corral.goldens/v1"
	SchemaHosts          = "corral.hosts/v1"
	SchemaPull           = "corral.pull/v1"
	SchemaRender         = "corral.render/v1"
	SchemaReview         = review.Schema
	SchemaSessions       = "corral.sessions/v1"
	SchemaSnapshots      = "corral.snapshots/v1"
	SchemaVersion        = "corral.version/v1"
)

// withSchema is the JSON object v with "schema" as its first key. v must
// encode as an object: a list goes under a key (printJSONList).
func withSchema(schema string, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if len(b) < 2 || b[0] != '{' {
		return nil, fmt.Errorf("printing %s: not a JSON object", schema)
	}
	head, _ := json.Marshal(map[string]string{"schema": schema})
	if string(b) == "{}" {
		return head, nil
	}
	return append(append(head[:len(head)-1:len(head)-1], ','), b[1:]...), nil
}

// printJSON is --json's one printer: the object v with "schema" first, as
// one JSON document indented by two spaces, then a newline. Commands
// whose --json is a stream (a log) print jsonLine per entry instead.
func printJSON(w io.Writer, schema string, v any) error {
	b, err := withSchema(schema, v)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return err
	}
	out.WriteByte('\n')
	_, err = dataOut(w).Write(out.Bytes())
	return err
}

// printJSONList prints a list as the object {"schema": schema, key: list};
// a nil list is printed as [].
func printJSONList[T any](w io.Writer, schema, key string, list []T) error {
	if list == nil {
		list = []T{}
	}
	return printJSON(w, schema, map[string]any{key: list})
}

// jsonLine writes v as one line of a JSON-lines stream, with "schema"
// first.
func jsonLine(w io.Writer, schema string, v any) error {
	b, err := withSchema(schema, v)
	if err != nil {
		return err
	}
	_, err = dataOut(w).Write(append(b, '\n'))
	return err
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
