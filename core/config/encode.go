package config

import (
	"bytes"
	"reflect"
	"strings"

	"github.com/BurntSushi/toml"
)

// deref returns the value behind a pointer, or v.
func deref(v any) any {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return nil
		}
		return rv.Elem().Interface()
	}
	return v
}

// tomlLine renders `key = value` (or a table) as TOML.
func tomlLine(key string, v any) string {
	var b bytes.Buffer
	enc := toml.NewEncoder(&b)
	enc.Indent = ""
	if err := enc.Encode(map[string]any{key: deref(v)}); err != nil {
		return key + " = ?"
	}
	return strings.TrimSpace(b.String())
}

// tomlValue renders just the value.
func tomlValue(v any) string {
	line := tomlLine("x", v)
	if after, ok := strings.CutPrefix(line, "x = "); ok {
		return after
	}
	return strings.ReplaceAll(strings.TrimPrefix(line, "[x]\n"), "\n", ", ")
}

// TOML renders the effective config as TOML. With origins, each key is
// preceded by a comment naming the layers that set it.
func (e Effective) TOML(origins bool) string {
	var scalars, tables strings.Builder
	for _, key := range Schema {
		if !isSet(&e.Config, key.Name) {
			continue
		}
		line := tomlLine(key.Name, field(&e.Config, key.Name).Interface())
		out := &scalars
		if strings.HasPrefix(line, "[") {
			out = &tables
			out.WriteString("\n")
		}
		if origins {
			out.WriteString("# from " + strings.Join(e.Origin[key.Name], ", ") + "\n")
		}
		out.WriteString(line + "\n")
	}
	return scalars.String() + tables.String()
}

// Values returns the effective config as plain values keyed by name, for
// JSON output.
func (e Effective) Values() map[string]any {
	m := map[string]any{}
	for _, key := range Schema {
		if isSet(&e.Config, key.Name) {
			m[key.Name] = deref(field(&e.Config, key.Name).Interface())
		}
	}
	return m
}
