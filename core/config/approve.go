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
	return AddToList(path, "egress", entries, fmt.Sprintf("requested by %s (%s)", file, hash), "corral approve", now)
}

// ApproveGroups is ApproveEgress for egress_groups.
func ApproveGroups(path string, groups []string, file, hash string, now time.Time) error {
	return AddToList(path, "egress_groups", groups, fmt.Sprintf("requested by %s (%s)", file, hash), "corral approve", now)
}

// listKeys are the list keys AddToList edits, with the check of an entry.
var listKeys = map[string]func(string) error{
	"egress":        CheckEgressEntry,
	"egress_groups": checkGroupName,
	"ports":         func(e string) error { _, err := ParsePort(e); return err },
}

// AddToList adds entries to the list key (egress, egress_groups or ports) of the
// trusted layer at path, as ApproveEgress describes, with a comment
// "# WHO DATE: WHY" above the statement. `corral approve` and `corral
// egress learn --apply` and `corral port` write through it.
func AddToList(path, key string, entries []string, why, who string, now time.Time) error {
	check, ok := listKeys[key]
	if !ok {
		return fmt.Errorf("adding to %s: not a list corral edits", key)
	}
	data, err := readLayerFile(path)
	if err != nil {
		return err
	}
	old, err := Parse(KindTrusted, path, data)
	if err != nil {
		return fmt.Errorf("adding to %s: the trusted file has problems; fix it first: %w", key, err)
	}
	want := slices.Clone(field(&old.Config, key).Interface().([]string))
	same := sameEntry
	if key == "ports" {
		same = SamePort // "3000" and "3000:3000" are one forward
	}
	for _, e := range entries {
		if err := check(e); err != nil {
			return fmt.Errorf("adding %q to %s: %w", e, key, err)
		}
		if !slices.ContainsFunc(want, func(h string) bool { return same(h, e) }) {
			want = append(want, e)
		}
	}
	stmt := fmt.Sprintf("# %s %s: %s\n%s\n", who, now.UTC().Format("2006-01-02"), why, tomlLine(key, want))
	var out []byte
	if line := old.Lines[key]; line > 0 {
		start := lineOffset(data, line)
		end, err := statementEnd(data, start)
		if err != nil {
			return fmt.Errorf("adding to %s: editing %s: %w", key, path, err)
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
	again, err := Parse(KindTrusted, path, out)
	if err != nil || !slices.Equal(field(&again.Config, key).Interface().([]string), want) {
		return errors.Join(fmt.Errorf("adding to %s: could not edit %s safely; add to it by hand:\n%s", key, path, tomlLine(key, want)), err)
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
		return 0, errors.New("no '=' after the key")
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
				return 0, errors.New("the value is not an array")
			}
		}
	}
	return 0, errors.New("unterminated array")
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
