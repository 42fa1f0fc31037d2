//go:build e2e

package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/toolreg"
)

// e2eNPMRegistry is where the offline test image's npm looks for packages
// (packaging/linux/build-image.sh NPM_REGISTRY): its golden build records
// it as the boxes' "toolchains" egress group, as it would a corporate
// mirror. The test serves a fake registry there on host loopback (the
// e2e network namespace has only loopback: a fixed port is free).
const (
	e2eNPMRegistry = "localhost:38460"
	e2eNPMPackage  = "corral-e2e-tiny"
)

// fakeNPMRegistry serves one package (packument and tarball) the way an npm
// registry does, and counts requests per path.
type fakeNPMRegistry struct {
	mu   sync.Mutex
	hits map[string]int
}

func (f *fakeNPMRegistry) count(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hits[path]
}

func startFakeNPMRegistry(t *testing.T) *fakeNPMRegistry {
	t.Helper()
	var tgz bytes.Buffer
	gz := gzip.NewWriter(&tgz)
	tw := tar.NewWriter(gz)
	for _, f := range []struct{ name, body string }{
		{"package/package.json", `{"name": "` + e2eNPMPackage + `", "version": "1.0.0", "main": "index.js"}` + "\n"},
		{"package/index.js", "module.exports = 'from the recorded registry';\n"},
	} {
		must(t, tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), ModTime: time.Unix(499162500, 0)}))
		_, err := tw.Write([]byte(f.body))
		must(t, err)
	}
	must(t, tw.Close())
	must(t, gz.Close())
	sum512 := sha512.Sum512(tgz.Bytes())
	sum1 := sha1.Sum(tgz.Bytes())
	tarPath := "/" + e2eNPMPackage + "/-/" + e2eNPMPackage + "-1.0.0.tgz"
	packument, err := json.Marshal(map[string]any{
		"name":      e2eNPMPackage,
		"dist-tags": map[string]string{"latest": "1.0.0"},
		"versions": map[string]any{"1.0.0": map[string]any{
			"name": e2eNPMPackage, "version": "1.0.0", "main": "index.js",
			"dist": map[string]string{
				"tarball":   "http://" + e2eNPMRegistry + tarPath,
				"integrity": "sha512-" + base64.StdEncoding.EncodeToString(sum512[:]),
				"shasum":    hex.EncodeToString(sum1[:]),
			},
		}},
	})
	must(t, err)
	f := &fakeNPMRegistry{hits: map[string]int{}}
	_, port, _ := net.SplitHostPort(e2eNPMRegistry)
	ln, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		t.Fatalf("the fake npm registry: %v", err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.hits[r.URL.Path]++
		f.mu.Unlock()
		switch r.URL.Path {
		case "/" + e2eNPMPackage:
			w.Header().Set("Content-Type", "application/json")
			w.Write(packument)
		case tarPath:
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write(tgz.Bytes())
		default:
			http.NotFound(w, r)
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return f
}

// npmInstallFromRecordedRegistry: the image's npm names a registry (a
// mirror, as far as corral knows); the golden recorded it; in this
// broker-mode box `npm install` of a package from it works at once, with
// no approval, through the broker (the session's proxy variables; only
// NO_PROXY is cleared, since it names localhost, the mirror's name here).
// About 20-60 s (npm under TCG).
func npmInstallFromRecordedRegistry(t *testing.T, x *h) {
	reg, _, code := x.corral("run", "--", "sh", "-c", "command -v npm >/dev/null && npm config get registry")
	if code != 0 {
		t.Fatal("the test image has no npm\nhint: rebuild it with packaging/linux/build-image.sh (it installs the npm pinned in core/pins/npm.txt)")
	}
	if strings.TrimSpace(reg) != "http://"+e2eNPMRegistry+"/" {
		t.Fatalf("the image's npm names %q, want http://%s/ (build-image.sh NPM_REGISTRY)", reg, e2eNPMRegistry)
	}
	var groups struct{ Toolchains struct{ Golden string } }
	must(t, json.Unmarshal([]byte(x.ok("egress", "groups", "--json")), &groups))
	rec, err := toolreg.Read(layout(x), groups.Toolchains.Golden)
	must(t, err)
	if !slices.Contains(rec.Entries(), e2eNPMRegistry) {
		t.Fatalf("the golden did not record its npm registry %s: %v", e2eNPMRegistry, rec.Entries())
	}
	fake := startFakeNPMRegistry(t)
	out, errOut, code := x.corral("run", "--", "sh", "-c",
		`set -e; d=$(mktemp -d); cd "$d"; NO_PROXY= no_proxy= npm install --no-audit --no-fund --loglevel=error "$1@1.0.0" >&2; node -p "require('$1')"`,
		"sh", e2eNPMPackage)
	if code != 0 || strings.TrimSpace(out) != "from the recorded registry" {
		t.Errorf("npm install from the recorded registry: exit %d, stdout %q\nstderr: %s", code, out, errOut)
	}
	if fake.count("/"+e2eNPMPackage) == 0 {
		t.Error("the fake registry saw no request for the package")
	}
	if b, _ := os.ReadFile(filepath.Join(x.home, "projects", x.box+".approvals.json")); strings.Contains(string(b), e2eNPMRegistry) {
		t.Errorf("an approval names the registry: %s", b)
	}
	audit, _ := os.ReadFile(filepath.Join(x.home, "logs", "audit.jsonl"))
	for _, l := range strings.Split(string(audit), "\n") {
		if strings.Contains(l, "egress-denied") && strings.Contains(l, e2eNPMRegistry) {
			t.Errorf("the broker denied the registry: %s", l)
		}
	}
}
