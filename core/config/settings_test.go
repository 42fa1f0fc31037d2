package config

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/agent"
	"github.com/corral-dev/corral/core/agentstate"
)

// TestSettingsCoverSchema: every schema key has exactly one Settings field
// (named as its Config field), and nothing else does, so a key added to
// Schema and Config without a Settings field fails here.
func TestSettingsCoverSchema(t *testing.T) {
	st, ct := reflect.TypeOf(Settings{}), reflect.TypeOf(Config{})
	byKey := map[string]reflect.StructField{}
	for i := range st.NumField() {
		f := st.Field(i)
		k := f.Tag.Get("key")
		if _, ok := KeyByName(k); !ok {
			t.Errorf("Settings.%s: key tag %q is no schema key", f.Name, k)
		}
		if _, dup := byKey[k]; dup {
			t.Errorf("key %s: two Settings fields", k)
		}
		byKey[k] = f
	}
	for _, k := range Schema {
		f, ok := byKey[k.Name]
		if !ok {
			t.Errorf("key %s: no Settings field", k.Name)
			continue
		}
		if cf := ct.Field(fieldIndex[k.Name]); cf.Name != f.Name {
			t.Errorf("key %s: Settings.%s, Config.%s", k.Name, f.Name, cf.Name)
		}
		if f.Type.Kind() == reflect.Pointer {
			t.Errorf("Settings.%s is a pointer", f.Name)
		}
	}
}

// TestSettingsDefaults: with nothing set, Settings holds every key's
// default, the same as Load's built-in layer gives, and the values the
// consumers applied themselves before Settings (noted where one did).
func TestSettingsDefaults(t *testing.T) {
	mac, linux := Platform{OS: "darwin", Arch: "arm64"}, Platform{OS: "linux", Arch: "amd64"}
	both := func(v any) [2]any { return [2]any{v, v} }
	want := map[string][2]any{ // key -> {macOS, Linux}
		"cpus":                 both(2),
		"memory":               both("4GiB"),
		"disk":                 both("50GiB"),
		"image":                both(""), // limayaml: nil image is the platform's default images
		"vm_type":              {VMTypeVZ, VMTypeQEMU},
		"mount_type":           {MountVirtiofs, Mount9p},
		"toolchains":           both([]string(nil)),
		"packages":             both([]string(nil)),
		"hide":                 both([]string(nil)),
		"box_dirs":             both([]string(nil)),
		"readonly_project":     both(false), // limayaml: derefBool
		"git_shadow":           both(true),  // box renderInput and lifecycle: nil is on
		"source":               both(SourceMount),
		"network":              both(NetworkBroker),
		"egress":               both([]string(nil)),
		"egress_groups":        both([]string(nil)),
		"learn_for":            both(DefaultLearnFor), // LearnDuration: unset or 0 is DefaultLearnFor
		"ports":                both([]string(nil)),
		"host_ports":           both([]int(nil)),
		"low_host_ports":       both(false), // GrantContext, box forward: nil is false
		"hold_denied":          both(time.Duration(0)),
		"agent":                both("claude"), // credential.Plan: nil is claude
		"agents":               both(map[string]agent.Def(nil)),
		"agent_state":          both(agentstate.Seeded),
		"profile":              both(ProfileDefault),
		"mounts":               both([]Mount(nil)),
		"forward_env":          both([]string(nil)),
		"env":                  both(map[string]string(nil)),
		"env_from_host":        both(map[string]string(nil)),
		"keychain_env":         both(map[string]SecretRef(nil)),
		"git_tokens":           both([]string(nil)),
		"credentials":          both(map[string]Credential(nil)),
		"agent_credentials":    both(AgentCredsBrokered), // credential.Plan: only "forwarded" forwards
		"claude_install":       both(ClaudeInstallOfficial),
		"provision":            both([]string(nil)),
		"sudo":                 both(false), // limayaml: derefBool
		"golden":               both(true),
		"idle_stop":            both(30 * time.Minute),
		"stop_on_exit":         both(false),
		"idle_action":          both(IdleActionStop),
		"save_when_free_below": both(uint64(0)), // off
		"snapshots":            both(SnapshotsOff),
		"snapshots_keep":       both(3),
		"terminal":             both(""), // app/terminal picks the platform's
		"project_roots":        both([]string(nil)),
		"host":                 both(""),              // this machine
		"upstream_proxy":       both(UpstreamProxy{}), // none: the broker dials directly
	}
	for _, k := range Schema {
		if _, ok := want[k.Name]; !ok {
			t.Errorf("key %s: no default in this table", k.Name)
		}
	}
	for i, p := range []Platform{mac, linux} {
		unset := Effective{Platform: p}.Settings()
		b := Merge(Defaults(p))
		b.Platform = p
		builtin := b.Settings()
		for _, k := range Schema {
			w := want[k.Name][i]
			if got := settingsField(unset, k.Name); !reflect.DeepEqual(got, w) {
				t.Errorf("%s %s unset: %#v, want %#v", p.OS, k.Name, got, w)
			}
			if got := settingsField(builtin, k.Name); !reflect.DeepEqual(got, w) {
				t.Errorf("%s %s from the built-in layer: %#v, want %#v", p.OS, k.Name, got, w)
			}
		}
	}
	// The schema's documented defaults, where they are TOML values, decode
	// to the same settings.
	unset := Effective{Platform: linux}.Settings()
	for _, k := range Schema {
		if k.Default == "" || k.Default == "[]" || k.Default == "{}" || strings.Contains(k.Default, " ") {
			continue // unset, empty, or prose ("platform default", per OS)
		}
		l, err := Parse(KindGlobal, "schema", []byte(k.Name+" = "+k.Default+"\n"))
		if err != nil {
			t.Errorf("%s: default %s: %v", k.Name, k.Default, err)
			continue
		}
		doc := Effective{Platform: linux, Config: l.Config}.Settings()
		if got, w := settingsField(unset, k.Name), settingsField(doc, k.Name); !reflect.DeepEqual(got, w) {
			t.Errorf("%s: Settings default %#v, schema says %s", k.Name, got, k.Default)
		}
	}
}

// TestSettingsValues: a set key is taken as it is, and learn_for = "0"
// is the default window (as LearnDuration was).
func TestSettingsValues(t *testing.T) {
	cpus, vm, agentName := 6, VMTypeQEMU, "codex"
	learn := NetworkLearn
	s := Effective{Platform: Platform{OS: "darwin"}, Config: Config{
		CPUs: &cpus, VMType: &vm, Agent: &agentName, Network: &learn,
		LearnFor: &Duration{}, HoldDenied: &Duration{time.Minute}, Egress: []string{"example.test"},
	}}.Settings()
	if s.CPUs != 6 || s.VMType != VMTypeQEMU || s.Agent != "codex" || s.HoldDenied != time.Minute ||
		s.LearnFor != DefaultLearnFor || len(s.Egress) != 1 || s.MountType != MountVirtiofs {
		t.Errorf("%+v", s)
	}
	if s.NetworkMode() != NetworkBroker || !s.Learns() {
		t.Errorf("learn: mode %s, learns %v", s.NetworkMode(), s.Learns())
	}
}

func settingsField(s Settings, key string) any {
	t := reflect.TypeOf(s)
	for i := range t.NumField() {
		if t.Field(i).Tag.Get("key") == key {
			return reflect.ValueOf(s).Field(i).Interface()
		}
	}
	return nil
}
