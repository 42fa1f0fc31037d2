package cli

import (
	"strings"

	"github.com/corral-dev/corral/core/agent"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/display"
	"github.com/spf13/cobra"
)

// AgentsOptions are the options of `corral agents`.
type AgentsOptions struct {
	IO      *IOStreams
	Factory *Factory
	JSON    bool
}

// AgentInfo is one row of `corral agents`.
type AgentInfo struct {
	Name     string   `json:"name"`
	Source   string   `json:"source"` // "built-in" or the config file that defines it
	Default  bool     `json:"default"`
	Command  []string `json:"command"`
	Install  bool     `json:"install"` // has an install step for the golden image
	NPM      []string `json:"npm,omitempty"`
	Forwards []string `json:"forwards"`
	Egress   []string `json:"egress"`
	StateDir string   `json:"state_dir,omitempty"`
}

// NewCmdAgents builds `corral agents`.
func NewCmdAgents(f *Factory, runF func(*AgentsOptions) error) *cobra.Command {
	opts := &AgentsOptions{IO: f.IO, Factory: f}
	cmd := &cobra.Command{
		Use:   "agents",
		Short: "List the agents corral can run",
		Long: `Agents lists the built-in agents and those defined under [agents.NAME] in
your config (as the current project's box sees them): the command a
session runs, the host variables it forwards, the hosts its broker
allows and where it keeps its state. * marks the box's agent.`,
		Example: "  corral agents\n  corral agents --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return agentsRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

// agentInfos lists the agents of a loaded config.
func agentInfos(res config.Result) []AgentInfo {
	c := res.Settings()
	out := []AgentInfo{}
	for _, a := range agent.All(c.Agents) {
		src := "built-in"
		if !a.Builtin {
			for _, l := range res.Layers {
				if _, ok := l.Config.Agents[a.Name]; ok {
					src = l.Path // the last layer that defines it wins (per-key merge)
				}
			}
		}
		out = append(out, AgentInfo{
			Name: a.Name, Source: src, Default: c.Agent == a.Name,
			Command: a.Command, Install: a.Install != "", NPM: a.NPM,
			Forwards: orEmpty(a.Passthrough), Egress: orEmpty(a.Egress), StateDir: a.StateDir,
		})
	}
	return out
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func agentsRun(opts *AgentsOptions) error {
	r, err := opts.Factory.Resolve(config.Config{})
	if err != nil {
		return err
	}
	infos := agentInfos(r.Loaded)
	if opts.JSON {
		return printJSONList(opts.IO.Out, SchemaAgents, "agents", infos)
	}
	t := newTable(opts.IO.Out, opts.IO.OutTTY)
	if opts.IO.OutTTY {
		t.Row("", "AGENT", "COMMAND", "FORWARDS", "HOSTS", "STATE", "SOURCE")
	}
	dash := func(s []string) string {
		if len(s) == 0 {
			return "-"
		}
		return strings.Join(s, ",")
	}
	for _, a := range infos {
		mark := ""
		if a.Default {
			mark = "*"
		}
		state := a.StateDir
		if state == "" {
			state = "-"
		} else {
			state = "~/" + state
		}
		// A definition comes from a trusted file, but its text still
		// reaches a terminal: escape it.
		t.Row(mark, a.Name, display.Text(strings.Join(a.Command, " "), 80), dash(a.Forwards), dash(a.Egress), display.Text(state, 40), a.Source)
	}
	return t.Flush()
}
