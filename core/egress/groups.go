package egress

import (
	"slices"
	"strings"
)

// Group is a named list of allow-list entries a user can opt into with
// the egress_groups config key.
type Group struct {
	Name    string
	Doc     string
	Entries []string
}

// ToolchainsGroup is the name of the group a box's golden image recorded:
// the registries its toolchains are configured for (see core/toolreg).
// It is not in [Groups]: its entries come from the image, not from corral.
const ToolchainsGroup = "toolchains"

// groups is the one list of named groups. It names code hosts and AI
// APIs only: package registries are never written down here, they are
// asked from the toolchains themselves at golden build (ToolchainsGroup).
var groups = []Group{
	{
		Name: "code-hosts",
		Doc:  "git hosting over https: clones, fetches, pushes, release and raw downloads",
		Entries: []string{
			"github.com", "*.github.com", "raw.githubusercontent.com", "objects.githubusercontent.com",
			"gitlab.com", "*.gitlab.com",
			"bitbucket.org", "*.bitbucket.org",
			"codeberg.org",
		},
	},
	{
		Name: "ai-apis",
		Doc:  "the APIs of hosted models, for agents and tools that call them",
		Entries: []string{
			"api.anthropic.com",
			"api.openai.com",
			"generativelanguage.googleapis.com",
			"api.mistral.ai",
		},
	},
}

// Groups returns the named groups users can opt into, in a stable order.
// The entries are copies.
func Groups() []Group {
	out := make([]Group, len(groups))
	for i, g := range groups {
		out[i] = Group{Name: g.Name, Doc: g.Doc, Entries: slices.Clone(g.Entries)}
	}
	return out
}

// GroupNames lists the names egress_groups accepts: every named group and
// ToolchainsGroup (which is in force whenever the golden recorded it;
// naming it changes nothing).
func GroupNames() []string {
	names := make([]string, 0, len(groups)+1)
	for _, g := range groups {
		names = append(names, g.Name)
	}
	return append(names, ToolchainsGroup)
}

// LookupGroup returns the named group; ToolchainsGroup is not one (its
// entries live with the golden image).
func LookupGroup(name string) (Group, bool) {
	for _, g := range groups {
		if g.Name == name {
			return Group{Name: g.Name, Doc: g.Doc, Entries: slices.Clone(g.Entries)}, true
		}
	}
	return Group{}, false
}

// GroupNamesText is GroupNames for messages: "code-hosts, ai-apis, toolchains".
func GroupNamesText() string { return strings.Join(GroupNames(), ", ") }
