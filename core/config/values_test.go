package config

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// enumerated are the keys whose values are a fixed list, with that list.
var enumerated = map[string][]string{
	"vm_type": VMTypes, "mount_type": MountTypes, "source": SourceOrder, "network": NetworkOrder,
	"agent_state": AgentStateOrder, "profile": ProfileOrder, "agent_credentials": AgentCredentialsOrder,
	"claude_install": ClaudeInstalls, "snapshots": SnapshotModes, "idle_action": IdleActions,
}

// TestEnumeratedKeysAreTyped: every enumerated key is a pointer to a named
// type (never a bare *string), its default is one of its values, validation
// takes each value and refuses any other, and its documentation names each.
func TestEnumeratedKeysAreTyped(t *testing.T) {
	def := Defaults(Platform{OS: "linux", Arch: "amd64"}).Config
	for key, allowed := range enumerated {
		f := field(&def, key)
		if f.Kind() != reflect.Pointer || f.Type().Elem().Kind() != reflect.String || f.Type().Elem() == reflect.TypeFor[string]() {
			t.Errorf("%s: field type %s, want a pointer to a named string type", key, f.Type())
			continue
		}
		if !f.IsNil() && !slices.Contains(allowed, f.Elem().String()) {
			t.Errorf("%s: default %q is not one of %q", key, f.Elem().String(), allowed)
		}
		k, _ := KeyByName(key)
		for _, v := range allowed {
			if !strings.Contains(k.Doc, strconv.Quote(v)) {
				t.Errorf("%s: the documentation does not name %q", key, v)
			}
			if errs := parseValidate(t, key+" = "+strconv.Quote(v)); len(errs) > 0 {
				t.Errorf("%s = %q: %v", key, v, errs)
			}
		}
		if errs := parseValidate(t, key+` = "no-such-value"`); len(errs) != 1 || !strings.Contains(errs[0].Error(), "unknown value") {
			t.Errorf("%s = \"no-such-value\": errors %v, want unknown value", key, errs)
		}
	}
	// Every Config field of a named string type is in the list above.
	ct := reflect.TypeFor[Config]()
	for i := range ct.NumField() {
		ft := ct.Field(i).Type
		if ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.String && ft.Elem() != reflect.TypeFor[string]() {
			key, _, _ := strings.Cut(ct.Field(i).Tag.Get("toml"), ",")
			if _, ok := enumerated[key]; !ok {
				t.Errorf("%s has a typed value but is not in the enumerated keys of this test", key)
			}
		}
	}
}

func parseValidate(t *testing.T, toml string) []error {
	t.Helper()
	l, err := Parse(KindGlobal, "g.toml", []byte(toml))
	if err != nil {
		t.Fatalf("%s: %v", toml, err)
	}
	return validate(l)
}
