package remote

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The menu's runner shares one ssh connection per host: its version check
// and every Output carry the same control master options and socket, the
// socket's directory is 0700; a runner without ControlDir (the CLI's
// sessions, which send secrets with SendEnv that a master would drop)
// carries none.
func TestRunnerSharesOneConnectionPerHost(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "hosts")
	h := mustHost(t, "gpu", "ssh://me@h", "", "")
	var argvs [][]string
	f := func(_ context.Context, _ string, argv []string, _ io.Reader, stdout, _ io.Writer) (int, error) {
		argvs = append(argvs, argv)
		if slices.Contains(argv, "'version' '--json'") || strings.HasSuffix(argv[len(argv)-1], "'version' '--json'") {
			io.WriteString(stdout, `{"version":"`+LocalBuild().Version+`","commit":"`+LocalBuild().Commit+`"}`)
		}
		return 0, nil
	}
	r := Runner{Exec: f, Batch: true, ControlDir: dir}
	if err := r.CheckVersion(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"ls", "--json"}, {"egress", "--json", "--", "web-3f2a1c"}} {
		if _, err := r.Output(context.Background(), h, args, 1<<10); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"-o", "ControlMaster=auto", "-o", "ControlPath=" + filepath.Join(dir, "gpu"), "-o", "ControlPersist=" + ControlPersist}
	for _, argv := range argvs {
		if i := slices.Index(argv, "ControlMaster=auto"); i < 1 || !slices.Equal(argv[i-1:i+5], want) {
			t.Errorf("argv %q lacks %q", argv, want)
		}
	}
	if len(argvs) != 3 {
		t.Errorf("%d ssh runs", len(argvs))
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("control directory %v, %v", fi, err)
	}

	argvs = nil
	r.ControlDir = ""
	if _, err := r.Output(context.Background(), h, []string{"ls"}, 1<<10); err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(argvs[0], func(a string) bool { return strings.HasPrefix(a, "Control") }) {
		t.Errorf("no ControlDir, yet %q", argvs[0])
	}
}

// ControlPath: the host's socket under dir; none when dir is unset or the
// path, with the 17 bytes ssh adds while it makes the master, would not
// fit a Unix socket on macOS (104 bytes); '%' doubled for ssh.
func TestControlPath(t *testing.T) {
	if got := ControlPath("/Users/john.doe/.corral/run/hosts", "gpu"); got != "/Users/john.doe/.corral/run/hosts/gpu" {
		t.Errorf("got %q", got)
	}
	if got := ControlPath("", "gpu"); got != "" {
		t.Errorf("no dir: %q", got)
	}
	long := "/Users/" + strings.Repeat("x", 60) + "/.corral/run/hosts"
	if got := ControlPath(long, "gpu"); got != "" {
		t.Errorf("too long for a socket: %q", got)
	}
	fits := strings.Repeat("d", 86-len("/h"))
	if got := ControlPath(fits, "h"); len(got) != 86 {
		t.Errorf("86 bytes should fit: %q", got)
	}
	if got := ControlPath("/tmp/100%", "h"); got != "/tmp/100%%/h" {
		t.Errorf("percent: %q", got)
	}
}
