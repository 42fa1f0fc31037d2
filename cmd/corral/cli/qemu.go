package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/funnel"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/qemu"
	"go.yaml.in/yaml/v3"
)

// isQemuShim reports whether corral was started as Lima's qemu (through
// the run/bin/qemu-system-<arch> link the lifecycle service creates).
func isQemuShim(argv0 string) bool {
	return strings.HasPrefix(filepath.Base(argv0), box.QemuShimName)
}

// qemuMain rewrites Lima's qemu command line and execs the real qemu:
// KVM when it is usable, TCG otherwise (nested PVM cannot boot a stock
// kernel), and for a box in broker or offline mode the host-enforced egress
// funnel (see core/funnel). It fails closed: no real qemu, a box it cannot
// identify, or an argv it cannot vouch for means no start, with the reason
// on stderr (Lima keeps it in the instance's ha.stderr.log).
func qemuMain(args []string) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "corral qemu: refusing to start: "+format+"\n", a...)
		return 1
	}
	arch := strings.TrimPrefix(filepath.Base(os.Args[0]), box.QemuShimName)
	real, err := qemu.FindQemu(arch)
	if err != nil {
		return fail("%v", err)
	}
	out, env := args, os.Environ()
	if !qemu.IsProbe(args) {
		opt := qemu.Options{Accel: qemu.AccelKeep}
		if runtime.GOOS == "linux" {
			opt.Accel = qemu.AccelKVM
			if ok, why := qemu.KVMUsable(); !ok {
				opt.Accel = qemu.AccelTCG
				fmt.Fprintf(os.Stderr, "corral qemu: using TCG: %s\n", why)
			}
		}
		if n, err := strconv.Atoi(os.Getenv("CORRAL_QEMU_TB_MB")); err == nil {
			opt.TBSizeMB = n
		}
		l, err := paths.Default()
		if err != nil {
			return fail("%v", err)
		}
		exe, err := os.Executable()
		if err == nil {
			// On macOS os.Executable is the path qemu was started by: the
			// qemu-system-* link, which would run the wrapper again.
			exe, err = filepath.EvalSymlinks(exe)
		}
		if err != nil {
			return fail("locating the corral executable: %v", err)
		}
		plan, err := planQemu(args, l, exe)
		if err != nil {
			return fail("%v", err)
		}
		opt.Funnel, opt.Offline = plan.funnel, plan.offline
		out, err = qemu.Rewrite(args, opt)
		if err != nil {
			return fail("%v", err)
		}
		fmt.Fprintf(os.Stderr, "corral qemu: box %s: %s\n", plan.box, plan.describe())
		// guest-conn (run by qemu per guest connection) finds the broker
		// socket in the same state directory.
		env = append(withoutEnv(env, paths.EnvHome), paths.EnvHome+"="+l.Home)
	}
	err = syscall.Exec(real, append([]string{real}, out...), env)
	fmt.Fprintf(os.Stderr, "corral qemu: exec %s: %v\n", real, err)
	return 1
}

// qemuPlan is the network the wrapper gives one VM.
type qemuPlan struct {
	box     string
	network string
	funnel  *qemu.Funnel
	offline bool
}

func (p qemuPlan) describe() string {
	switch {
	case p.funnel != nil:
		return fmt.Sprintf("network %s: slirp restrict=on, only guestfwd %s:%d to the broker", p.network, funnel.GuestAddr, p.funnel.GuestFwdPort)
	case p.offline:
		return fmt.Sprintf("network %s: slirp restrict=on, no guestfwd", p.network)
	}
	return fmt.Sprintf("network %s: unrestricted slirp", p.network)
}

// planQemu finds the box a VM launch is for and the network it must get.
// Lima names the instance in -pidfile <LIMA_HOME>/<box>/qemu.pid; that
// LIMA_HOME must be corral's. A box's network comes from its metadata; a
// golden image (no metadata) is judged by its template's param.NETWORK.
func planQemu(args []string, l paths.Layout, exe string) (qemuPlan, error) {
	pidFile := ""
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "-pidfile" || args[i] == "--pidfile" {
			pidFile = args[i+1]
		}
	}
	if pidFile == "" {
		return qemuPlan{}, errors.New("no -pidfile in the command line: cannot tell which box this is")
	}
	inst := filepath.Dir(pidFile)
	name := filepath.Base(inst)
	if !sameDir(filepath.Dir(inst), l.LimaHome()) {
		return qemuPlan{}, fmt.Errorf("instance %s is not in corral's LIMA_HOME %s", inst, l.LimaHome())
	}
	p := qemuPlan{box: name}
	m, err := box.ReadMeta(l, name)
	switch {
	case err == nil:
		p.network = m.Network
		if m.Network == funnel.NetworkBroker {
			p.funnel = &qemu.Funnel{GuestFwdPort: m.BrokerPort, GuestConnCmd: funnel.GuestCommand(exe, name)}
		}
	case errors.Is(err, box.ErrNoMeta) && strings.HasPrefix(name, "golden-"):
		if p.network, err = templateNetwork(filepath.Join(inst, "lima.yaml")); err != nil {
			return qemuPlan{}, fmt.Errorf("golden image %s: %w", name, err)
		}
		if p.network == funnel.NetworkBroker {
			return qemuPlan{}, fmt.Errorf("golden image %s: network broker has no broker to funnel to", name)
		}
	default:
		return qemuPlan{}, fmt.Errorf("box %s: %w (corral runs only the boxes it created)", name, err)
	}
	switch p.network {
	case "full":
	case funnel.NetworkBroker:
	case funnel.NetworkOffline:
		p.offline = true
	default:
		return qemuPlan{}, fmt.Errorf("box %s: unknown network %q", name, p.network)
	}
	return p, nil
}

// templateNetwork reads param.NETWORK from a Lima instance template.
func templateNetwork(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading its template: %w", err)
	}
	var t struct {
		Param map[string]string `yaml:"param"`
	}
	if err := yaml.Unmarshal(b, &t); err != nil {
		return "", fmt.Errorf("reading its template %s: %w", path, err)
	}
	return t.Param["NETWORK"], nil
}

// sameDir compares two directories, following symbolic links if the names
// differ.
func sameDir(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}

func withoutEnv(env []string, name string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}
