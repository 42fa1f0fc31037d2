package cli

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/broker"
	"github.com/corral-dev/corral/core/broker/brokertest"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/paths"
	"github.com/spf13/cobra"
)

// writeBoxMeta records a box for e's project, as `corral up` would.
func writeBoxMeta(t *testing.T, e env, network config.Network) paths.Layout {
	t.Helper()
	l := paths.Layout{Home: e.home}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	if err := boxmeta.Write(l, boxmeta.Meta{Name: e.box, Project: e.proj, Network: network, BrokerPort: 42001}); err != nil {
		t.Fatal(err)
	}
	return l
}

// testFactory is run's factory, for commands built with a runF hook.
func testFactory(e env, tty bool) (*Factory, *bytes.Buffer, *bytes.Buffer) {
	io, _, out, errOut := Test(tty)
	f := &Factory{
		IO:        io,
		Layout:    func() (paths.Layout, error) { return paths.Layout{Home: e.home}, nil },
		Platform:  config.Platform{OS: "linux", Arch: "amd64"},
		LookupEnv: func(string) (string, bool) { return "", false },
		Dir:       e.proj,
	}
	return f, out, errOut
}

// startBroker runs `corral broker args...` in-process with the test
// resolver until the test ends, and returns its listen address.
func startBroker(t *testing.T, e env, args []string) string {
	t.Helper()
	f, _, _ := testFactory(e, false)
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan string, 1)
	cmd := NewCmdBroker(f, func(opts *BrokerOptions) error {
		o := opts.core()
		o.Layout = paths.Layout{Home: e.home}
		o.Resolver = brokertest.Resolver{}
		o.Listening = func(a net.Addr) { addrc <- a.String() }
		return broker.Run(ctx, o)
	})
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	cmd.SilenceUsage = true
	done := make(chan error, 1)
	go func() { done <- cmd.Execute() }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("broker returned %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Error("broker did not stop within 15s of cancellation")
		}
	})
	select {
	case a := <-addrc:
		return a
	case err := <-done:
		done <- err
		t.Fatalf("broker exited: %v", err)
	case <-time.After(15 * time.Second):
		t.Fatal("broker did not listen within 15s")
	}
	return ""
}

func TestBrokerFlags(t *testing.T) {
	e := setup(t, "")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"broker"}, "--listen is required"},
		{[]string{"broker", "--listen", "0.0.0.0:42000"}, `--listen "0.0.0.0:42000": the broker listens on a loopback IP and port only`},
		{[]string{"broker", "--listen", "localhost:42000"}, `--listen "localhost:42000"`},
		{[]string{"broker", "--listen", "192.168.5.2:42000"}, `"192.168.5.2:42000"`},
		{[]string{"broker", "--box", "b", "--listen", "127.0.0.1:1", "--allow", "x.example.test"}, `--allow "x.example.test": a box's allow-list comes from its config and approvals`},
		{[]string{"broker", "--box", "b", "--listen", "127.0.0.1:1", "--allow-range", "127.0.0.0/8"}, `--allow-range "127.0.0.0/8" cannot be used with --box`},
		{[]string{"broker", "--box", "b", "--listen", "127.0.0.1:1", "--log", "x"}, `--log "x" cannot be used with --box`},
		{[]string{"broker", "--listen", "127.0.0.1:0", "--allow", "https://x.example.test/"}, `"https://x.example.test/"`},
		{[]string{"broker", "--box", "nope-123456", "--listen", "127.0.0.1:0"}, "no such box: nope-123456"},
	} {
		code, out, errOut := run(t, e, false, c.args...)
		if code != 1 || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: code %d out %q err %q, want %q", c.args, code, out, errOut, c.want)
		}
	}
}

// TestBrokerHelperProcess is not a test: TestBrokerExitsOnSIGTERM runs
// the test binary with it to get a real corral broker process.
func TestBrokerHelperProcess(t *testing.T) {
	args := os.Getenv("CORRAL_BROKER_HELPER_ARGS")
	if args == "" {
		t.Skip("helper process")
	}
	f := &Factory{IO: System(), Layout: paths.Default, LookupEnv: os.LookupEnv}
	if code := Run(f, strings.Fields(args)); code != 0 {
		t.Fatalf("corral broker exited %d", code)
	}
}

func TestBrokerExitsOnSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	e := setup(t, "")
	writeBoxMeta(t, e, "broker")
	for name, args := range map[string]string{
		"foreground": "broker --listen 127.0.0.1:0 --allow api.example.test",
		"box":        "broker --box " + e.box + " --listen 127.0.0.1:0",
	} {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestBrokerHelperProcess$", "-test.count=1")
			cmd.Env = append(os.Environ(), "CORRAL_BROKER_HELPER_ARGS="+args, paths.EnvHome+"="+e.home)
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(stderr)
			addr := ""
			for addr == "" && sc.Scan() {
				addr, _ = strings.CutPrefix(sc.Text(), "corral broker: listening on ")
			}
			if addr == "" {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatal("broker did not report its address")
			}
			go io.Copy(io.Discard, stderr)
			// Denied: the system resolver is not asked for an unlisted name.
			if code, reason := brokertest.ProxyGet(t, addr, "http://other.example.test/"); code != http.StatusForbidden || reason != "host-not-allowed" {
				t.Errorf("got %d %q", code, reason)
			}
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			waited := make(chan error, 1)
			go func() { waited <- cmd.Wait() }()
			select {
			case err := <-waited:
				if err != nil {
					t.Errorf("broker exit after SIGTERM: %v", err)
				}
			case <-time.After(15 * time.Second):
				cmd.Process.Kill()
				t.Fatal("broker still running 15s after SIGTERM")
			}
		})
	}
}

// TestBrokerArgvContract: the command line core/box starts a broker with
// parses, through the cobra command, into the same box and address that
// broker.ParseArgv recognises in a process list.
func TestBrokerArgvContract(t *testing.T) {
	e := setup(t, "")
	want := broker.Args{Box: e.box, Listen: "127.0.0.1:42001"}
	argv := broker.Argv(want)
	f, _, _ := testFactory(e, false)
	var got *BrokerOptions
	root := &cobra.Command{Use: "corral", SilenceErrors: true, SilenceUsage: true}
	root.AddCommand(NewCmdBroker(f, func(o *BrokerOptions) error { got = o; return nil }))
	root.SetArgs(argv)
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if got == nil || got.Box != want.Box || got.Listen != want.Listen {
		t.Fatalf("cobra parsed %q into %+v, want %+v", argv, got, want)
	}
	if parsed, ok := broker.ParseArgv(append([]string{"/bin/corral"}, argv...)); !ok || parsed != want {
		t.Errorf("ParseArgv: %+v %v, want %+v", parsed, ok, want)
	}
}
