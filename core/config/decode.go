package config

import (
	"bytes"
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
)

// decodeStrict decodes TOML into dst so that a key is known only when it
// is exactly a toml tag of the struct at its level. The TOML library would
// match struct fields case-insensitively, with Unicode folding ("EGRESS"
// or "git_tokenſ" would fill Egress or GitTokens), so the struct never
// sees a table: every table is decoded into a map of raw values first,
// each key is looked up exactly, and only leaf values (strings, numbers,
// booleans, lists of them, TextUnmarshalers) are handed to the library.
//
// It returns every problem at once, each a *Violation naming the file, the
// line and the key, and the line of each top-level key that was decoded.
func decodeStrict(file string, data []byte, dst *Config) (map[string]int, []error) {
	return decodeStrictValue(file, data, dst)
}

// decodeStrictValue is decodeStrict into any struct (the managed policy
// has its own schema, decoded by the same exact-key rule).
func decodeStrictValue(file string, data []byte, dst any) (map[string]int, []error) {
	var top map[string]toml.Primitive
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&top)
	if err != nil {
		line, err := cleanTOMLError(err)
		return nil, []error{&ParseError{File: file, Line: line, Err: err}}
	}
	d := &strictDecoder{md: md, file: file, lines: map[string]int{}}
	d.table("", top, reflect.ValueOf(dst).Elem())
	sort.SliceStable(d.errs, func(i, j int) bool { return d.errs[i].(*Violation).Line < d.errs[j].(*Violation).Line })
	if d.dropped > 0 {
		d.errs = append(d.errs, &Violation{File: file, Reason: fmt.Sprintf("and %d more problems", d.dropped)})
	}
	return d.lines, d.errs
}

// maxProblems caps the problems one file reports: a file of 40,000
// unknown keys gets a short answer, and finding a key's line (which costs
// a pass over the file) is paid at most this many times.
const maxProblems = 20

type strictDecoder struct {
	md      toml.MetaData
	file    string
	lines   map[string]int // top-level key -> line
	errs    []error
	dropped int // problems past maxProblems
}

// fail records a problem at the key p came from.
func (d *strictDecoder) fail(path string, p toml.Primitive, reason, fix string) {
	if len(d.errs) >= maxProblems {
		d.dropped++
		return
	}
	d.errs = append(d.errs, &Violation{File: d.file, Line: d.line(p), Key: path, Reason: reason, Fix: fix})
}

var (
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	primitiveType       = reflect.TypeFor[toml.Primitive]()
)

// table fills the struct v from m, key by exact key.
func (d *strictDecoder) table(path string, m map[string]toml.Primitive, v reflect.Value) {
	fields := tomlFields(v.Type())
	for _, k := range sortedKeys(m) {
		i, ok := fields[k]
		if !ok && len(d.errs) >= maxProblems {
			d.dropped++
			continue
		}
		if !ok {
			names := make([]string, 0, len(fields))
			for n := range fields {
				names = append(names, n)
			}
			sort.Strings(names)
			fix := "known keys here: " + strings.Join(names, ", ")
			if len(names) > 6 {
				fix = "see docs/CONFIG.md for the keys"
			}
			if s := suggest(k, names); s != "" {
				fix = fmt.Sprintf("did you mean %q? keys are exact (case-sensitive)", s)
			}
			d.fail(joinKey(path, k), m[k], "unknown key", fix)
			continue
		}
		if path == "" {
			d.lines[k] = d.line(m[k]) // at most one per schema key
		}
		d.value(joinKey(path, k), m[k], v.Field(i))
	}
}

// value fills v from p and reports whether it did.
func (d *strictDecoder) value(path string, p toml.Primitive, v reflect.Value) bool {
	t := v.Type()
	switch {
	case t.Kind() == reflect.Pointer:
		n := reflect.New(t.Elem())
		if !d.value(path, p, n.Elem()) {
			return false
		}
		v.Set(n)
		return true
	case reflect.PointerTo(t).Implements(textUnmarshalerType):
		return d.leaf(path, p, v)
	case t.Kind() == reflect.Struct:
		var m map[string]toml.Primitive
		if !d.leaf(path, p, reflect.ValueOf(&m).Elem()) {
			return false
		}
		n := len(d.errs)
		d.table(path, m, v)
		return len(d.errs) == n
	case t.Kind() == reflect.Map:
		var m map[string]toml.Primitive
		if !d.leaf(path, p, reflect.ValueOf(&m).Elem()) {
			return false
		}
		out := reflect.MakeMapWithSize(t, len(m))
		ok := true
		for _, k := range sortedKeys(m) {
			e := reflect.New(t.Elem()).Elem()
			if d.value(joinKey(path, k), m[k], e) {
				out.SetMapIndex(reflect.ValueOf(k).Convert(t.Key()), e)
			} else {
				ok = false
			}
		}
		v.Set(out)
		return ok
	case t.Kind() == reflect.Slice && !isLeafType(t.Elem()):
		var s []toml.Primitive
		if !d.leaf(path, p, reflect.ValueOf(&s).Elem()) {
			return false
		}
		out := reflect.MakeSlice(t, 0, len(s))
		ok := true
		for i := range s {
			e := reflect.New(t.Elem()).Elem()
			if d.value(fmt.Sprintf("%s[%d]", path, i), s[i], e) {
				out = reflect.Append(out, e)
			} else {
				ok = false
			}
		}
		v.Set(out)
		return ok
	}
	return d.leaf(path, p, v)
}

// isLeafType reports whether values of t hold no keys, so the library may
// decode them directly.
func isLeafType(t reflect.Type) bool {
	if t == primitiveType || reflect.PointerTo(t).Implements(textUnmarshalerType) {
		return true
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return false
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return isLeafType(t.Elem())
	}
	return true
}

// leaf decodes p into v with the library: v holds no struct, so no key can
// be matched loosely.
func (d *strictDecoder) leaf(path string, p toml.Primitive, v reflect.Value) bool {
	err := d.md.PrimitiveDecode(p, v.Addr().Interface())
	if err == nil {
		return true
	}
	msg := err.Error()
	var pe toml.ParseError
	if errors.As(err, &pe) {
		msg = pe.Message
	}
	msg = tomlErrPrefix().ReplaceAllString(msg, "")
	if strings.HasPrefix(msg, "incompatible types") {
		msg = "wrong type: " + wantType(v.Type())
	}
	d.fail(path, p, msg, "")
	return false
}

var tomlErrPrefix = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^toml: (line \d+ )?(\(last key "[^"]*"\): )?`) })

// wantType names the TOML type a Go type takes, for error messages.
func wantType(t reflect.Type) string {
	if reflect.PointerTo(t).Implements(textUnmarshalerType) {
		return "want a string"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return wantType(t.Elem())
	case reflect.String:
		return "want a string"
	case reflect.Bool:
		return "want true or false"
	case reflect.Int, reflect.Int64:
		return "want an integer"
	case reflect.Slice:
		return "want a list"
	case reflect.Map, reflect.Struct:
		return "want a table"
	}
	return "want " + t.String()
}

// lineProbe fails every decode: the library then reports the position of
// the key the value came from, which is the only way to learn it.
type lineProbe struct{}

var errProbe = errors.New("probe")

func (lineProbe) UnmarshalTOML(any) error { return errProbe }

// line is the line where p's key was set. A table created implicitly by a
// header such as [a.b] has no position of its own; a child's line stands
// in for it (the first child in key order that has one, so that the cost
// stays bounded by the depth, not the width, of the table).
func (d *strictDecoder) line(p toml.Primitive) int {
	var pe toml.ParseError
	if errors.As(d.md.PrimitiveDecode(p, &lineProbe{}), &pe) && pe.Position.Line > 0 {
		return pe.Position.Line
	}
	var m map[string]toml.Primitive
	if d.md.PrimitiveDecode(p, &m) != nil {
		return 0
	}
	for _, k := range sortedKeys(m) {
		if l := d.line(m[k]); l > 0 {
			return l
		}
	}
	return 0
}

// tomlFields maps the exact toml tag of each field of struct type t to its
// index.
func tomlFields(t reflect.Type) map[string]int {
	m := map[string]int{}
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("toml"), ",")
		if name != "" && name != "-" {
			m[name] = i
		}
	}
	return m
}

func sortedKeys(m map[string]toml.Primitive) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

var bareKey = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]+$`) })

// maxKeyShown caps how much of a key an error shows.
const maxKeyShown = 64

// joinKey appends k to a dotted path, quoting k (ASCII-only escapes, so a
// look-alike letter or a control character shows as \u017f or \x1b) when
// it is not a bare key.
func joinKey(path, k string) string {
	if !bareKey().MatchString(k) {
		k = strconv.QuoteToASCII(k)
	}
	if len(k) > maxKeyShown {
		k = k[:maxKeyShown] + "…"
	}
	if path == "" {
		return k
	}
	return path + "." + k
}

// suggest returns the known name that k most likely meant, or "": the same
// name under case or Unicode folding, with '-' for '_', or within two edits.
func suggest(k string, names []string) string {
	norm := func(s string) string { return strings.ReplaceAll(s, "-", "_") }
	for _, n := range names {
		if strings.EqualFold(norm(k), n) {
			return n
		}
	}
	if utf8.RuneCountInString(k) > 2*maxKeyShown {
		return ""
	}
	best, bestD := "", 3
	for _, n := range names {
		if dist := editDistance(strings.ToLower(k), n); dist < bestD && dist < len(n)/2 {
			best, bestD = n, dist
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in runes.
func editDistance(a, b string) int {
	ar, br := []rune(a), []rune(b)
	prev := make([]int, len(br)+1)
	cur := make([]int, len(br)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ar); i++ {
		cur[0] = i
		for j := 1; j <= len(br); j++ {
			cost := 1
			if ar[i-1] == br[j-1] {
				cost = 0
			}
			cur[j] = slices.Min([]int{prev[j] + 1, cur[j-1] + 1, prev[j-1] + cost})
		}
		prev, cur = cur, prev
	}
	return prev[len(br)]
}
