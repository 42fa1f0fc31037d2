package config

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
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

// listKeys are the list keys AddToList edits.
var listKeys = []string{"egress", "egress_groups", "ports", "toolchains", "packages"}

// AddToList adds entries to the list key (egress, egress_groups, ports,
// toolchains or packages) of the trusted layer at path, as ApproveEgress
// describes, with a comment "# WHO DATE: WHY" above the statement. Each
// entry must pass the grant check (CheckGrant, with a zero GrantContext:
// no low host ports) and the layer as a whole must validate; the read,
// check and write happen under the file's lock (path + ".lock"), so two
// writers never lose each other's entries. It is the one writer of the
// trusted layer's lists; commands call [Result.AddToTrusted], which also
// checks the config as a whole.
func AddToList(path, key string, entries []string, why, who string, now time.Time) error {
	return addToList(path, key, entries, why, who, now, GrantContext{}, nil)
}

// AddToTrusted is AddToList for the trusted layer of the config r loaded:
// each entry passes the grant check in r's context (low_host_ports), and
// the config loaded again with the new trusted layer in place (the same
// request: global layer, the same repository snapshot, flags) must have no
// problem at all, caps and port clashes included: the check `corral config
// check` runs. Nothing is written otherwise.
func (r Result) AddToTrusted(key string, entries []string, why, who string, now time.Time) error {
	_, err := r.AddAllToTrusted(map[string][]string{key: entries}, why, who, now, nil)
	return err
}

// AddAllToTrusted is AddToTrusted for several lists at once (entries per
// key, edited in listKeys order), validated as a whole and written once:
// a problem with any key (a refused entry, the ports cap) writes none.
// commit, when not nil, runs under the file's lock after every check and
// just before the write, with the content about to be written; an error
// from it writes nothing (the caller's audit record goes there). It
// reports whether anything was to be written (false: every entry was
// there already, and commit was not called).
func (r Result) AddAllToTrusted(entries map[string][]string, why, who string, now time.Time, commit func(out []byte) error) (bool, error) {
	if r.req.TrustedPath == "" {
		return false, fmt.Errorf("adding to %s: the config was loaded without a trusted layer", strings.Join(slices.Sorted(maps.Keys(entries)), ", "))
	}
	req := r.req
	return addToLists(req.TrustedPath, entries, why, who, now, r.Settings().GrantContext(), func(out []byte) error {
		req.trustedData = out
		_, err := Load(req)
		return err
	}, commit)
}

// TrustedPath is the trusted layer r was loaded with ("" for none).
func (r Result) TrustedPath() string { return r.req.TrustedPath }

func addToList(path, key string, entries []string, why, who string, now time.Time, ctx GrantContext, whole func([]byte) error) error {
	_, err := addToLists(path, map[string][]string{key: entries}, why, who, now, ctx, whole, nil)
	return err
}

func addToLists(path string, entries map[string][]string, why, who string, now time.Time, ctx GrantContext, whole, commit func([]byte) error) (bool, error) {
	var keys []string
	for k := range entries {
		if !slices.Contains(listKeys, k) {
			return false, fmt.Errorf("adding to %s: not a list corral edits", k)
		}
	}
	for _, k := range listKeys {
		if len(entries[k]) > 0 {
			keys = append(keys, k)
		}
	}
	what := strings.Join(keys, ", ")
	// The grant check first: a refused entry stops the write, whatever
	// else the lists hold.
	var errs []error
	for _, key := range keys {
		for _, e := range entries[key] {
			errs = append(errs, CheckGrant(key, e, ctx).Err())
		}
	}
	if err := errors.Join(errs...); err != nil {
		return false, fmt.Errorf("adding to %s of %s (nothing was written): %w", what, path, err)
	}
	unlock, err := atomicfile.Lock(path + atomicfile.LockSuffix)
	if err != nil {
		return false, err
	}
	defer unlock()
	data, err := readLayerFile(path)
	if err != nil {
		return false, err
	}
	old, err := Parse(KindTrusted, path, data)
	if err != nil {
		return false, fmt.Errorf("adding to %s: the trusted file has problems; fix it first: %w", what, err)
	}
	out, cur, changed := data, old, false
	for _, key := range keys {
		next, again, ok, err := editList(path, out, cur, key, entries[key], why, who, now, ctx)
		if err != nil {
			return false, err
		}
		if ok {
			out, cur, changed = next, again, true
		}
	}
	if !changed {
		return false, nil // every entry is there already: nothing to write
	}
	// The layer as a whole, as config check would see it.
	errs = validate(cur)
	// Its ports as one box forwards them (clashes, the cap); low host ports
	// are the grant check's, in the caller's context.
	for _, why := range CheckPorts(parsePorts(cur.Config.PortEntries), true) {
		errs = append(errs, &Violation{File: path, Key: "ports", Reason: why})
	}
	if err := errors.Join(errs...); err != nil {
		return false, fmt.Errorf("adding to %s of %s (nothing was written): the file would not validate: %w", what, path, err)
	}
	if whole != nil {
		if err := whole(out); err != nil {
			return false, fmt.Errorf("adding to %s of %s (nothing was written): the config would not load: %w", what, path, err)
		}
	}
	if commit != nil {
		if err := commit(out); err != nil {
			return false, err
		}
	}
	return true, atomicfile.WriteFile(path, out, atomicfile.FileMode)
}

// editList adds entries to the list key of the layer text data (parsed as
// old) and returns the new text, parsed; changed is false when every
// entry was there already.
func editList(path string, data []byte, old Layer, key string, entries []string, why, who string, now time.Time, ctx GrantContext) (out []byte, again Layer, changed bool, err error) {
	want := slices.Clone(field(&old.Config, key).Interface().([]string))
	same := sameEntry
	if key == "ports" {
		same = SamePort // "3000" and "3000:3000" are one forward
	}
	for _, e := range entries {
		if key == "egress" {
			e = CheckGrant(key, e, ctx).Entry // canonical
		}
		if !slices.ContainsFunc(want, func(h string) bool { return same(h, e) }) {
			want = append(want, e)
		}
	}
	if len(want) == len(field(&old.Config, key).Interface().([]string)) {
		return data, old, false, nil
	}
	stmt := fmt.Sprintf("# %s %s: %s\n%s\n", who, now.UTC().Format("2006-01-02"), why, tomlLine(key, want))
	if line := old.Lines[key]; line > 0 {
		start := lineOffset(data, line)
		end, err := statementEnd(data, start)
		if err != nil {
			return nil, Layer{}, false, fmt.Errorf("adding to %s: editing %s: %w", key, path, err)
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
	again, err = Parse(KindTrusted, path, out)
	if err != nil || !slices.Equal(field(&again.Config, key).Interface().([]string), want) {
		return nil, Layer{}, false, errors.Join(fmt.Errorf("adding to %s: could not edit %s safely; add to it by hand:\n%s", key, path, tomlLine(key, want)), err)
	}
	return out, again, true, nil
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
