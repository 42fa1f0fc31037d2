package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
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
	Set    []string // keys the layer sets, in schema order
}

// Warning is a non-fatal problem, such as an unknown key.
type Warning struct {
	File, Key, Msg string
}

func (w Warning) String() string {
	return fmt.Sprintf("%s: %s: %s", w.File, w.Key, w.Msg)
}

// ParseError is a file that is not valid TOML for the schema.
type ParseError struct {
	File string
	Err  error
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("%s: %v", e.File, e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }

// LoadFile decodes a TOML layer. A missing file is an empty layer.
func LoadFile(kind Kind, path string) (Layer, []Warning, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Layer{Kind: kind, Path: path}, nil, nil
	}
	if err != nil {
		return Layer{}, nil, fmt.Errorf("reading config %s: %w", path, err)
	}
	return Parse(kind, path, data)
}

// Parse decodes TOML bytes as a layer named path.
func Parse(kind Kind, path string, data []byte) (Layer, []Warning, error) {
	l := Layer{Kind: kind, Path: path}
	if !isUTF8(data) {
		return l, nil, &ParseError{File: path, Err: errors.New("not valid UTF-8")}
	}
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&l.Config)
	if err != nil {
		return Layer{Kind: kind, Path: path}, nil, &ParseError{File: path, Err: cleanTOMLError(err)}
	}
	var warns []Warning
	for _, k := range md.Undecoded() {
		top := k[0]
		if _, known := KeyByName(top); known && len(k) > 1 {
			warns = append(warns, Warning{File: path, Key: k.String(), Msg: "unknown field, ignored"})
			continue
		}
		if len(k) == 1 {
			warns = append(warns, Warning{File: path, Key: k.String(), Msg: "unknown key, ignored (a typo in a security setting would silently do nothing)"})
		}
	}
	for _, key := range Schema {
		if md.IsDefined(key.Name) {
			l.Set = append(l.Set, key.Name)
		}
	}
	return l, warns, nil
}

func isUTF8(b []byte) bool { return strings.ToValidUTF8(string(b), "\uFFFD") == string(b) }

func cleanTOMLError(err error) error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		msg := pe.Message
		if pe.LastKey != "" {
			msg += fmt.Sprintf(" (key %q)", pe.LastKey)
		}
		return fmt.Errorf("line %d: %s", pe.Position.Line, msg)
	}
	return err
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
