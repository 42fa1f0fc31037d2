package egress

import (
	"slices"
	"strings"
	"testing"
)

// Every group parses as a policy, has no wildcard over a public suffix,
// and no entry twice; names are unique and never the recorded group's.
func TestGroupsAreValidAllowLists(t *testing.T) {
	seen := map[string]bool{}
	for _, g := range Groups() {
		if g.Name == "" || g.Doc == "" || len(g.Entries) == 0 {
			t.Errorf("group %+v: name, doc and entries are required", g)
		}
		if seen[g.Name] || g.Name == ToolchainsGroup {
			t.Errorf("group name %q is taken", g.Name)
		}
		seen[g.Name] = true
		p, err := ParsePolicy(g.Entries, nil)
		if err != nil {
			t.Errorf("group %s: %v", g.Name, err)
			continue
		}
		if p.String() != strings.Join(g.Entries, ", ") {
			t.Errorf("group %s is not in canonical form: %s", g.Name, p.String())
		}
		// The grant check over every group: core/config
		// TestEgressGroupsPassTheGrantCheck.
		for i, e := range g.Entries {
			if slices.Contains(g.Entries[:i], e) {
				t.Errorf("group %s lists %s twice", g.Name, e)
			}
		}
	}
}

func TestLookupGroup(t *testing.T) {
	g, ok := LookupGroup("code-hosts")
	if !ok || !slices.Contains(g.Entries, "github.com") {
		t.Fatalf("code-hosts = %+v, %v", g, ok)
	}
	g.Entries[0] = "changed.example"
	if again, _ := LookupGroup("code-hosts"); again.Entries[0] == "changed.example" {
		t.Error("LookupGroup hands out the shared list")
	}
	if _, ok := LookupGroup(ToolchainsGroup); ok {
		t.Error("the recorded group is not a named one")
	}
	if _, ok := LookupGroup("Code-Hosts"); ok {
		t.Error("group names are exact")
	}
	if names := GroupNames(); names[len(names)-1] != ToolchainsGroup || !slices.Contains(names, "ai-apis") {
		t.Errorf("GroupNames = %v", names)
	}
}
