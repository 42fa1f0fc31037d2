package config

import (
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/corral-dev/corral/core/untrusted"
)

// Kind names a layer.
type Kind string

const (
	KindDefault Kind = "default"
	KindGlobal  Kind = "global"
	KindProject Kind = "project"
	KindTrusted Kind = "trusted"
	KindFlags   Kind = "flags"
)

// Trusted reports whether a layer speaks for the user (not the repository).
func (k Kind) Trusted() bool { return k != KindProject }

// Layer is one decoded config source.
type Layer struct {
	Kind   Kind
	Path   string // file path, or "default"/"flags"
	Config Config
	// Set lists the keys the layer sets, in schema order. It is derived
	// from the decoded Config (every field that holds a value), never from
	// the file's text: what the trust policy checks is what was decoded.
	Set   []string
	Lines map[string]int // key -> line in the file, where known
}

// ParseError is a file that cannot be read as a config at all: not a
// regular file, too large, nested too deep, not UTF-8, or not TOML.
type ParseError struct {
	File string
	Line int // 0: the file as a whole
	Err  error
}

func (e *ParseError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.File, e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }

// LoadFile reads and decodes a TOML layer. A missing file is an empty
// layer. Every layer is read as hostile input (the project layer is
// box-writable; the others cost nothing to treat the same): a regular file
// after following symlinks, at most MaxFileSize bytes.
func LoadFile(kind Kind, path string) (Layer, error) {
	data, err := readLayerFile(path)
	if err != nil || data == nil {
		return Layer{Kind: kind, Path: path}, err
	}
	return Parse(kind, path, data)
}

// readLayerFile reads a config file as hostile input; a missing file is
// nil data and no error.
func readLayerFile(path string) ([]byte, error) {
	data, err := untrusted.ReadFile(path, MaxFileSize)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	var fe *untrusted.FileError
	if errors.As(err, &fe) {
		return nil, &ParseError{File: path, Err: errors.New(fe.What)}
	}
	if err != nil {
		return nil, fmt.Errorf("reading config %s: %w", path, err)
	}
	if data == nil {
		data = []byte{}
	}
	return data, nil
}

// Parse decodes TOML bytes as a layer named path: size and nesting are
// checked before the TOML parser sees the bytes, and every key must be
// exactly a schema name (see decodeStrict). On error the layer holds what
// did decode, for reporting; the caller must not apply it.
func Parse(kind Kind, path string, data []byte) (Layer, error) {
	empty := Layer{Kind: kind, Path: path}
	if len(data) > MaxFileSize {
		return empty, &ParseError{File: path, Err: fmt.Errorf("larger than %d bytes", MaxFileSize)}
	}
	if !isUTF8(data) {
		return empty, &ParseError{File: path, Err: errors.New("not valid UTF-8")}
	}
	if perr := checkNesting(data, MaxNesting); perr != nil {
		perr.File = path
		return empty, perr
	}
	l := Layer{Kind: kind, Path: path}
	lines, errs := decodeStrict(path, data, &l.Config)
	l.Lines = lines
	l.Set = setKeys(&l.Config)
	return l, errors.Join(errs...)
}

// line is where the top-level key of path (such as "mounts[0].location")
// was set, or 0.
func (l Layer) line(path string) int {
	top := path
	if i := strings.IndexAny(path, ".["); i >= 0 {
		top = path[:i]
	}
	return l.Lines[top]
}

// setKeys lists the schema keys that hold a value in c, in schema order.
func setKeys(c *Config) []string {
	var set []string
	for _, key := range Schema {
		if isSet(c, key.Name) {
			set = append(set, key.Name)
		}
	}
	return set
}

func isUTF8(b []byte) bool { return strings.ToValidUTF8(string(b), "\uFFFD") == string(b) }

// cleanTOMLError makes a parser error name its line the way every other
// config error does (file:line: message).
func cleanTOMLError(err error) (int, error) {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		msg := pe.Message
		if pe.LastKey != "" {
			msg += fmt.Sprintf(" (key %s)", strconv.QuoteToASCII(pe.LastKey))
		}
		return pe.Position.Line, errors.New(msg)
	}
	return 0, err
}

// fieldIndex maps toml key names to Config field indexes.
var fieldIndex = func() map[string]int {
	m := map[string]int{}
	t := reflect.TypeOf(Config{})
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("toml"), ",")
		m[name] = i
	}
	for _, k := range Schema {
		if _, ok := m[k.Name]; !ok {
			panic("config: schema key without field: " + k.Name)
		}
	}
	if len(m) != len(Schema) {
		panic("config: field without schema entry")
	}
	return m
}()

func field(c *Config, key string) reflect.Value {
	return reflect.ValueOf(c).Elem().Field(fieldIndex[key])
}

// isSet reports whether a key has a value in c.
func isSet(c *Config, key string) bool {
	v := field(c, key)
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice:
		return !v.IsNil()
	}
	return true
}

// Effective is the merged configuration and where each key came from.
type Effective struct {
	Config Config
	Origin map[string][]string // key -> layer paths that contributed, lowest first
	// Platform is the one Load rendered the built-in layer for; Settings
	// takes the platform-dependent defaults from it.
	Platform Platform
}

// Merge combines layers in order using each key's merge rule.
func Merge(layers ...Layer) Effective {
	eff := Effective{Origin: map[string][]string{}}
	for _, l := range layers {
		for _, key := range Schema {
			lc := l.Config
			if !isSet(&lc, key.Name) {
				continue
			}
			src := field(&lc, key.Name)
			dst := field(&eff.Config, key.Name)
			switch key.Merge {
			case MergeReplace:
				dst.Set(src)
				eff.Origin[key.Name] = []string{l.Path}
			case MergeUnion:
				dst.Set(union(dst, src))
				eff.Origin[key.Name] = appendOnce(eff.Origin[key.Name], l.Path)
			case MergeKeys:
				if dst.IsNil() {
					dst.Set(reflect.MakeMap(src.Type()))
				}
				for _, k := range src.MapKeys() {
					dst.SetMapIndex(k, src.MapIndex(k))
				}
				eff.Origin[key.Name] = appendOnce(eff.Origin[key.Name], l.Path)
			}
		}
	}
	return eff
}

func union(a, b reflect.Value) reflect.Value {
	out := reflect.MakeSlice(b.Type(), 0, a.Len()+b.Len())
	seen := map[any]bool{}
	for _, s := range []reflect.Value{a, b} {
		if !s.IsValid() || s.IsNil() {
			continue
		}
		for i := range s.Len() {
			e := s.Index(i)
			k := e.Interface()
			if seen[k] {
				continue
			}
			seen[k] = true
			out = reflect.Append(out, e)
		}
	}
	return out
}

func appendOnce(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// SortedKeys returns a map's keys in order, for stable output.
func SortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
