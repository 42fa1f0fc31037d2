package cli

import (
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/boxstate"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/display"
	"github.com/corral-dev/corral/core/funnel"
	"github.com/corral-dev/corral/core/limayaml"
	"github.com/spf13/cobra"
)

// InfoOptions are the options of `corral info`.
type InfoOptions struct {
	IO *IOStreams
	// Box names the box; "" is the current project's box (Project).
	Box     string
	Project func() (string, error)
	// Status reads one box's status and its pending repository requests.
	Status func(name string) (Info, error)
	JSON   bool
}

// Info is everything `corral info` shows about one box: its status
// (metadata, state, memory, sessions, idle time) and the hosts its
// repository requests that no one has approved.
type Info struct {
	box.Status
	Pending []config.RepoRequest `json:"pending_requests"`
	// Refused are the requests the grant check refuses: a verdict (they
	// can never be approved), each with the reason.
	Refused []config.RepoRequest `json:"refused_requests"`
	// Funnel is the proof of the host egress funnel of a running box
	// (funnel.Verify over its qemu's command line): "in force", "not
	// applicable" (vz, full network, or a stopped box), or "not proved: "
	// and why.
	Funnel string `json:"funnel"`
	// Drift says whether the config now renders another template than the
	// box was created from: "up to date", "changed: corral rebuild applies
	// it", or "unknown: " and why.
	Drift string `json:"drift"`
	// Mounts are the host directories the box has (its Lima instance).
	Mounts []limayaml.Mount `json:"mounts"`
	// PendingError is why the box's config did not load, when it did
	// not: Pending is then unknown, not empty.
	PendingError string `json:"pending_error,omitempty"`
}

// driftOf is Info.Drift for box m.
func driftOf(s *box.Service, m boxmeta.Meta) string {
	changed, err := s.Drift(m)
	switch {
	case err != nil:
		return "unknown: " + err.Error()
	case changed:
		return "changed: corral rebuild " + m.Name + " applies it"
	}
	return "up to date"
}

// funnelProof is Info.Funnel for a box in layout l.
func funnelProof(limaHome string, st box.Status) string {
	if st.State != boxstate.Running || !funnel.Applies(runtime.GOOS, st.VMType, st.Network) {
		return "not applicable"
	}
	if err := funnel.Verify(limaHome, st.Name, funnel.Want{VMType: st.VMType, Network: st.Network, BrokerPort: st.BrokerPort, HostPorts: st.HostPorts}); err != nil {
		return "not proved: " + err.Error()
	}
	return "in force"
}

// NewCmdInfo builds `corral info [BOX]`.
func NewCmdInfo(f *Factory, runF func(*InfoOptions) error) *cobra.Command {
	opts := &InfoOptions{IO: f.IO,
		Project: func() (string, error) { return boxArg(f, nil) },
		Status: func(name string) (Info, error) {
			s, err := f.Service()
			if err != nil {
				return Info{}, err
			}
			m, err := boxmeta.Read(s.Layout, name)
			if err != nil {
				return Info{}, fmt.Errorf("reading box %q: %w", name, err)
			}
			st := s.StatusOf(m)
			mounts, _ := s.Mounts(m.Name) // none listed when the instance is gone
			open, perr := boxmeta.OpenRequestsErr(s.Layout, m.Name, m.Project)
			in := Info{Status: st, Pending: open.Pending, Refused: open.Refused,
				Funnel: funnelProof(s.Layout.LimaHome(), st), Drift: driftOf(s, m), Mounts: mounts}
			if perr != nil {
				in.PendingError = perr.Error()
			}
			return in, nil
		}}
	cmd := &cobra.Command{
		Use:     "info [BOX]",
		Short:   "Show everything about one box",
		Long:    "Info shows one box (the current project's when none is named): state, project, template hash, golden image, network mode, broker and egress funnel proof, mounts, memory now and cap, sessions, idle time and pending repository requests.",
		Example: "  corral info\n  corral info web-1a2b3c --json",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Box = args[0]
			}
			if runF != nil {
				return runF(opts)
			}
			return infoRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

func infoRun(opts *InfoOptions) error {
	name := opts.Box
	if name == "" {
		var err error
		if name, err = opts.Project(); err != nil {
			return err
		}
	}
	in, err := opts.Status(name)
	if err != nil {
		return err
	}
	if opts.JSON {
		if in.Pending == nil {
			in.Pending = []config.RepoRequest{}
		}
		if in.Refused == nil {
			in.Refused = []config.RepoRequest{}
		}
		if in.Mounts == nil {
			in.Mounts = []limayaml.Mount{}
		}
		return printJSON(opts.IO.Out, SchemaBoxInfo, in)
	}
	st := in.Status
	or := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	mem := "-"
	if st.MemBytes > 0 {
		mem = config.FormatSize(st.MemBytes)
	}
	mem += " / " + config.FormatSize(st.MemoryCap)
	idle := "-"
	if st.Live == 0 && st.Idle > 0 {
		idle = st.Idle.Round(time.Minute).String()
	}
	broker := "-"
	if st.BrokerPort > 0 {
		broker = fmt.Sprintf("port %d, not running", st.BrokerPort)
		if st.Broker {
			broker = fmt.Sprintf("port %d, running", st.BrokerPort)
		}
	}
	t := newTable(opts.IO.Out, opts.IO.OutTTY)
	t.Row("box", st.Name)
	t.Row("state", st.Shown())
	if st.Problem != "" {
		t.Row("problem", safeText(st.Problem))
	}
	t.Row("project", or(st.Project))
	t.Row("template hash", or(st.TemplateHash))
	t.Row("config drift", or(in.Drift))
	t.Row("golden", or(st.Golden))
	network := string(st.Network)
	if !st.LearningUntil.IsZero() {
		network += ", learning until " + st.LearningUntil.Local().Format("2006-01-02 15:04") + " (corral egress learn " + st.Name + ")"
	}
	t.Row("network", network)
	t.Row("broker", broker)
	t.Row("funnel", or(in.Funnel))
	t.Row("vm type", or(string(st.VMType)))
	t.Row("mount type", or(string(st.MountType)))
	for _, m := range in.Mounts {
		mode := "read-only"
		if m.Writable {
			mode = "writable"
		}
		at := m.MountPoint
		if at == "" {
			at = m.Location
		}
		t.Row("mount", fmt.Sprintf("%s -> %s (%s)", display.Text(m.Location, 256), display.Text(at, 256), mode))
	}
	ports := "-"
	if len(st.Ports) > 0 {
		ports = portsText(st.Ports) + " (on the host's 127.0.0.1)"
	}
	t.Row("ports", ports)
	t.Row("host ports", hostPortsText(st))
	t.Row("memory", mem)
	t.Row("cpus", st.CPUs)
	t.Row("sessions", st.Live)
	t.Row("idle", idle)
	t.Row("idle stop", or(st.IdleStop))
	if in.PendingError != "" {
		t.Row("pending requests", "unknown: the config does not load")
	} else {
		t.Row("pending requests", len(in.Pending))
		t.Row("refused requests", len(in.Refused))
	}
	if err := t.Flush(); err != nil {
		return err
	}
	if len(in.Pending) > 0 {
		fmt.Fprintf(opts.IO.Out, "its repository requests %d host(s) or port(s); review with corral approve %s\n", len(in.Pending), display.Text(st.Name, 0))
	}
	if len(in.Refused) > 0 {
		fmt.Fprintf(opts.IO.Out, "its repository requests %d entr(ies) the grant check refuses: never allowed; corral config check -C %s says why\n", len(in.Refused), shellArg(display.Text(st.Project, maxCell)))
	}
	if in.PendingError != "" {
		// Unknown, not none: say so (on stderr; the exit status stays 0).
		warnLines(opts.IO.ErrOut, "warning: its config does not load, so what its repository requests is unknown:", errors.New(in.PendingError))
	}
	return nil
}

// hostPortsText is the "host ports" row: the named host loopback ports
// the box may reach, and where and how (core/box HostPortsRoute).
func hostPortsText(st box.Status) string {
	if len(st.HostPorts) == 0 {
		return "-"
	}
	ps := make([]string, len(st.HostPorts))
	for i, p := range st.HostPorts {
		ps[i] = strconv.Itoa(p)
	}
	return strings.Join(ps, ", ") + " (" + box.HostPortsRoute(st.Meta) + ")"
}
