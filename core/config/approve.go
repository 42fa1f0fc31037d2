package config

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/corral-dev/corral/core/atomicfile"
)

// ApproveEgress adds entries to the egress list of the trusted layer at
// path (the user's per-box file), with a comment naming the repository
// file and the content hash they were requested by. The rest of the file,
// comments included, is kept byte for byte: the new list replaces the old
// `egress = [...]` statement in place, or is added before the first table.
// The result is decoded again and must hold exactly the old entries plus
// the new ones, or nothing is written.
func ApproveEgress(path string, entries []string, file, hash string, now time.Time) error {
	data, err := readLayerFile(path)
	if err != nil {
		return err
	}
	old, err := Parse(KindTrusted, path, data)
	if err != nil {
		return fmt.Errorf("approving requests: the trusted file has problems; fix it first: %w", err)
	}
	want := slices.Clone(old.Config.Egress)
	for _, e := range entries {
		if err := CheckEgressEntry(e); err != nil {
			return fmt.Errorf("approving %q: %w", e, err)
		}
		if !slices.ContainsFunc(want, func(h string) bool { return sameEntry(h, e) }) {
			want = append(want, e)
		}
	}
	stmt := fmt.Sprintf("# corral approve %s: requested by %s (%s)\n%s\n",
		now.UTC().Format("2006-01-02"), file, hash, tomlLine("egress", want))
	var out []byte
	if line := old.Lines["egress"]; line > 0 {
		start := lineOffset(data, line)
		end, err := statementEnd(data, start)
		if err != nil {
			return fmt.Errorf("approving requests: editing %s: %w", path, err)
		}
		out = append(append(append(out, data[:start]...), stmt...), bytes.TrimPrefix(data[end:], []byte("\n"))...)
	} else {
		at := firstTable(data)
		head := data[:at]
		if len(head) > 0 && !bytes.HasSuffix(head, []byte("\n")) {
			head = append(slices.Clone(head), '\n')
		}
		out = append(append(append(out, head...), stmt...), data[at:]...)
	}
	check, err := Parse(KindTrusted, path, out)
	if err != nil || !slices.Equal(check.Config.Egress, want) {
		return errors.Join(fmt.Errorf("approving requests: could not edit %s safely; add to it by hand:\n%s", path, tomlLine("egress", want)), err)
	}
	return atomicfile.WriteFile(path, out, atomicfile.FileMode)
}

// lineOffset is the byte offset where line n (1-based) starts.
func lineOffset(data []byte, n int) int {
	off := 0
	for i := 1; i < n; i++ {
		j := bytes.IndexByte(data[off:], '\n')
		if j < 0 {
			return len(data)
		}
		off += j + 1
	}
	return off
}

// statementEnd returns the offset just past the value of the key/value
// statement that starts at start: past its array's closing bracket, which
// may be lines later.
func statementEnd(data []byte, start int) (int, error) {
	eq := bytes.IndexByte(data[start:], '=')
	if eq < 0 {
		return 0, errors.New("no '=' after the egress key")
	}
	depth, line := 0, 0
	for i := start + eq + 1; i < len(data); i++ {
		switch data[i] {
		case '"', '\'':
			i = skipString(data, i, &line)
		case '#':
			for i+1 < len(data) && data[i+1] != '\n' {
				i++
			}
		case '[':
			depth++
		case ']':
			depth--
			if depth == 0 {
				return i + 1, nil
			}
		case ' ', '\t', '\r', '\n':
		default:
			if depth == 0 {
				return 0, errors.New("egress is not an array")
			}
		}
	}
	return 0, errors.New("unterminated egress array")
}

// firstTable is the offset of the first table header ([x] or [[x]] at the
// start of a line), or the end of data. A line inside a multi-line string
// can look like one; the caller's re-parse catches that.
func firstTable(data []byte) int {
	off := 0
	for _, l := range strings.SplitAfter(string(data), "\n") {
		if strings.HasPrefix(strings.TrimLeft(l, " \t"), "[") {
			return off
		}
		off += len(l)
	}
	return len(data)
}
