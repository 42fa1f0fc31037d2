package brokertest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Squid is Debian's squid on 127.0.0.1, started by a test as a broker's
// upstream proxy: Basic authentication of one user (its helper,
// basic_ncsa_auth, checks an MD5-crypt password file), tunnels and
// requests only to the addresses the test names, and an access log of
// every request it sees, refused ones included.
type Squid struct {
	Addr string // 127.0.0.1:PORT
	dir  string
}

// SquidBinary is where squid is looked for: $CORRAL_TEST_SQUID, else
// Debian's /usr/sbin/squid (packaging/linux/test-deps.sh installs it).
// Its helpers are in ../lib/squid beside it, its error pages in
// ../share/squid/errors.
func SquidBinary() string {
	if p := os.Getenv("CORRAL_TEST_SQUID"); p != "" {
		return p
	}
	return "/usr/sbin/squid"
}

// StartSquid runs squid until the test ends, for user and pass, letting
// authenticated clients reach only the addresses in allow (CIDR ranges or
// addresses) on any port, CONNECT included. It skips the test when squid
// or openssl (for the password file) is not installed.
func StartSquid(t testing.TB, user, pass string, allow []string) *Squid {
	t.Helper()
	bin := SquidBinary()
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("squid is not installed (%s; packaging/linux/test-deps.sh installs it)", bin)
	}
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl is not installed (the squid password file is made with it)")
	}
	prefix := filepath.Dir(filepath.Dir(bin))
	dir := t.TempDir()
	if os.Getuid() == 0 {
		// squid started as root runs as cache_effective_user (nobody,
		// below), which must reach and write its logs: t.TempDir's
		// parent is 0700.
		d, err := os.MkdirTemp("", "corral-squid-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		os.Chmod(d, 0o777) //nolint:errcheck
		dir = d
	}
	// The password goes to openssl on stdin, never on its command line.
	hash := exec.Command("openssl", "passwd", "-1", "-stdin")
	hash.Stdin = strings.NewReader(pass + "\n")
	out, err := hash.Output()
	if err != nil {
		t.Fatalf("openssl passwd: %v", err)
	}
	must(t, os.WriteFile(filepath.Join(dir, "passwd"), []byte(user+":"+strings.TrimSpace(string(out))+"\n"), 0o644))
	ln := ListenOutsideBrokerPorts(t)
	addr := ln.Addr().String()
	ln.Close()
	conf := []string{
		"http_port " + addr,
		"pid_filename none",
		"cache_log " + filepath.Join(dir, "cache.log"),
		"logformat corral %rm %ru %un %>Hs",
		"access_log stdio:" + filepath.Join(dir, "access.log") + " corral",
		"buffered_logs off",
		"cache deny all",
		"coredump_dir " + dir,
		"unlinkd_program " + filepath.Join(prefix, "lib", "squid", "unlinkd"),
		"error_directory " + filepath.Join(prefix, "share", "squid", "errors", "templates"),
		"mime_table " + filepath.Join(prefix, "share", "squid", "mime.conf"),
		"icon_directory " + filepath.Join(prefix, "share", "squid", "icons"),
		"auth_param basic program " + filepath.Join(prefix, "lib", "squid", "basic_ncsa_auth") + " " + filepath.Join(dir, "passwd"),
		"auth_param basic realm corral-test",
		"acl authed proxy_auth REQUIRED",
		"acl targets dst " + strings.Join(allow, " "),
		"http_access deny !authed",
		"http_access allow authed targets",
		"http_access deny all",
		"shutdown_lifetime 0 seconds",
		"dns_nameservers 127.0.0.1",
	}
	if os.Getuid() == 0 {
		conf = append(conf, "cache_effective_user nobody")
	}
	must(t, os.WriteFile(filepath.Join(dir, "squid.conf"), []byte(strings.Join(conf, "\n")+"\n"), 0o644))
	ctx, cancel := context.WithCancel(context.Background())
	// A service name of its own (-n): squid names its shared memory
	// segments (/dev/shm/NAME-cf__*.shm) after it, so two squids at once (a
	// unit test and the e2e suite) or one killed earlier never clash
	// ("shm_open ... File exists").
	service := fmt.Sprintf("corral%d%d", os.Getpid(), time.Now().UnixNano()%1e9)
	cmd := exec.CommandContext(ctx, bin, "-N", "-n", service, "-f", filepath.Join(dir, "squid.conf"))
	// Stopped, not killed, so that it removes its segments (and its
	// shutdown_lifetime is 0).
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = nil, &stderr
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("starting squid: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		cmd.Wait() //nolint:errcheck // killed
	})
	// Ready when squid says so: a probe connection would be a line in
	// its access log.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if log, _ := os.ReadFile(filepath.Join(dir, "cache.log")); strings.Contains(string(log), "Accepting HTTP Socket connections at") {
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "cache.log"))
			t.Fatalf("squid did not listen on %s within 20s:\n%s\n%s", addr, log, stderr.String())
		}
	}
	return &Squid{Addr: addr, dir: dir}
}

// WaitRequests returns Requests once there are at least n, or after 10 s:
// squid logs a tunnel when it ends, after its client has its answer.
func (s *Squid) WaitRequests(n int) []string {
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := s.Requests()
		if len(r) >= n || time.Now().After(deadline) {
			return r
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Requests are the requests squid has logged, one "METHOD URL USER STATUS"
// each ("-" for no user), refused ones included.
func (s *Squid) Requests() []string {
	f, err := os.Open(filepath.Join(s.dir, "access.log"))
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// Logs are squid's own log and access log, for a failure message and a
// scan.
func (s *Squid) Logs() string {
	a, _ := os.ReadFile(filepath.Join(s.dir, "access.log"))
	c, _ := os.ReadFile(filepath.Join(s.dir, "cache.log"))
	return fmt.Sprintf("access.log:\n%s\ncache.log:\n%s", a, c)
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
