// Package pins holds the third-party packages corral installs into boxes,
// pinned by version and integrity hash, and fetches them with the npm
// client the host already has configured: corral never names a registry,
// it asks `npm pack` for NAME@VERSION and refuses any tarball whose hash
// is not the pinned one.
//
// The pins live in npm.txt (embedded here and read by
// packaging/linux/npm-fetch.sh, so image builds and golden builds install
// the same bytes). Every agent installed from npm (core/agent NPM) works
// the same way: Claude Code, Codex, and Gemini CLI with its Node.
package pins

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha512"
	_ "embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/corral-dev/corral/core/hostbin"
	"github.com/corral-dev/corral/core/untrusted"
)

//go:embed npm.txt
var npmTxt []byte

// Package is one pinned npm package.
type Package struct {
	Name      string // e.g. "@anthropic-ai/claude-code-linux-x64"
	Version   string // exact, e.g. "2.1.328"
	Integrity string // "sha512-" + base64 of the tarball's SHA-512
}

// Spec is NAME@VERSION, what npm pack is asked for.
func (p Package) Spec() string { return p.Name + "@" + p.Version }

// File is the tarball's file name in a cache directory: the name with "@"
// dropped and "/" turned into "-", then the version (what npm pack names
// it).
func (p Package) File() string {
	n := strings.ReplaceAll(strings.TrimPrefix(p.Name, "@"), "/", "-")
	return n + "-" + p.Version + ".tgz"
}

// SHA512Hex is the pinned SHA-512 in hex, for tools (sha512sum in a guest)
// that do not read integrity strings.
func (p Package) SHA512Hex() string {
	sum, _ := decodeIntegrity(p.Integrity) // validated by Parse
	return hex.EncodeToString(sum)
}

var (
	nameRe    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(@[a-z0-9][a-z0-9._-]*/)?[a-z0-9][a-z0-9._-]*$`) })
	versionRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`) })
)

// Parse reads a pins file: "NAME VERSION INTEGRITY" per line, "#" comments
// and blank lines ignored. Every problem is reported, each with its line.
func Parse(b []byte) ([]Package, error) {
	var out []Package
	var errs []error
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			errs = append(errs, fmt.Errorf("line %d: want NAME VERSION INTEGRITY, got %d fields", n, len(f)))
			continue
		}
		p := Package{Name: f[0], Version: f[1], Integrity: f[2]}
		switch {
		case !nameRe().MatchString(p.Name):
			errs = append(errs, fmt.Errorf("line %d: %q is not an npm package name", n, p.Name))
		case !versionRe().MatchString(p.Version):
			errs = append(errs, fmt.Errorf("line %d: %q is not an exact version", n, p.Version))
		case seen[p.Spec()]:
			errs = append(errs, fmt.Errorf("line %d: %s is pinned twice", n, p.Spec()))
		default:
			if _, err := decodeIntegrity(p.Integrity); err != nil {
				errs = append(errs, fmt.Errorf("line %d: %w", n, err))
				continue
			}
			seen[p.Spec()] = true
			out = append(out, p)
		}
	}
	return out, errors.Join(errs...)
}

func decodeIntegrity(s string) ([]byte, error) {
	b64, ok := strings.CutPrefix(s, "sha512-")
	if !ok {
		return nil, fmt.Errorf("integrity %q: only sha512- hashes are accepted", s)
	}
	sum, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(sum) != sha512.Size {
		return nil, fmt.Errorf("integrity %q: not a base64 SHA-512", s)
	}
	return sum, nil
}

// NPM returns the pinned npm packages.
func NPM() []Package {
	ps, err := Parse(npmTxt)
	if err != nil {
		panic("core/pins: npm.txt: " + err.Error()) // a test keeps the embedded file valid
	}
	return ps
}

// Lookup returns the pin of an npm package pinned at one version.
func Lookup(name string) (Package, error) {
	return Resolve(name, "")
}

// Resolve returns the one pin a pattern names for a Go architecture
// ("amd64", "arm64"; "" when the pattern names none): NAME, where
// "{arch}" stands for npm's architecture ("x64", "arm64"), optionally
// followed by "@*SUFFIX" to pick, among the versions pinned for NAME, the
// one ending in SUFFIX (Codex publishes its platform builds as versions of
// one name: @openai/codex@0.171.0-linux-x64).
func Resolve(pattern, goarch string) (Package, error) {
	name, suffix := pattern, ""
	if i := strings.LastIndex(pattern, "@*"); i > 0 {
		name, suffix = pattern[:i], pattern[i+2:]
	}
	if strings.Contains(pattern, "{arch}") {
		a := map[string]string{"amd64": "x64", "arm64": "arm64"}[goarch]
		if a == "" {
			return Package{}, fmt.Errorf("no npm package %s for architecture %q", pattern, goarch)
		}
		name = strings.ReplaceAll(name, "{arch}", a)
		suffix = strings.ReplaceAll(suffix, "{arch}", a)
	}
	var found []Package
	for _, p := range NPM() {
		if p.Name == name && strings.HasSuffix(p.Version, suffix) {
			found = append(found, p)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return Package{}, fmt.Errorf("npm package %s is not pinned in core/pins/npm.txt", strings.TrimSuffix(name+"@*"+suffix, "@*"))
	}
	return Package{}, fmt.Errorf("npm package %s is pinned at %d versions in core/pins/npm.txt; name one", name, len(found))
}

// ClaudeCode is the pinned Claude Code platform package for a Go
// architecture ("amd64" or "arm64").
func ClaudeCode(goarch string) (Package, error) {
	return Resolve("@anthropic-ai/claude-code-linux-{arch}", goarch)
}

// ErrMismatch means a tarball's hash is not the pinned one.
var ErrMismatch = errors.New("tarball does not match its pinned integrity hash")

// Verify checks the file at path against p's integrity hash.
func Verify(path string, p Package) error {
	want, err := decodeIntegrity(p.Integrity)
	if err != nil {
		return err
	}
	f, err := untrusted.Open(path)
	if err != nil {
		return fmt.Errorf("verifying %s: %w", p.Spec(), err)
	}
	defer f.Close()
	h := sha512.New()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("verifying %s: %w", p.Spec(), err)
	}
	if !bytes.Equal(h.Sum(nil), want) {
		return fmt.Errorf("%s (%s): %w", p.Spec(), path, ErrMismatch)
	}
	return nil
}

// Runner runs the npm client in dir and returns its standard output.
type Runner func(ctx context.Context, dir string, args ...string) ([]byte, error)

// Fetcher fetches pinned tarballs into a cache directory.
type Fetcher struct {
	// Dir is the cache directory (created 0700 when missing).
	Dir string
	// Run runs npm; nil runs the npm client found in PATH.
	Run Runner
}

// Fetch returns the path of p's verified tarball in the cache, running
// `npm pack NAME@VERSION` when the cache does not hold it. The npm client
// uses its own configured registry; the tarball is accepted only when its
// SHA-512 is the pinned one, so the registry is trusted for availability,
// never for content.
func (f Fetcher) Fetch(ctx context.Context, p Package) (string, error) {
	dst := filepath.Join(f.Dir, p.File())
	if Verify(dst, p) == nil {
		return dst, nil
	}
	if err := os.MkdirAll(f.Dir, 0o700); err != nil {
		return "", fmt.Errorf("npm cache %s: %w", f.Dir, err)
	}
	tmp, err := os.MkdirTemp(f.Dir, ".pack-")
	if err != nil {
		return "", fmt.Errorf("npm cache %s: %w", f.Dir, err)
	}
	defer os.RemoveAll(tmp)
	run := f.Run
	if run == nil {
		run = runNPM
	}
	out, err := run(ctx, tmp, "pack", "--json", "--pack-destination", tmp, p.Spec())
	if err != nil {
		return "", fmt.Errorf("fetching %s with npm pack: %w", p.Spec(), err)
	}
	name, err := packedName(out)
	if err != nil {
		return "", fmt.Errorf("fetching %s with npm pack: %w", p.Spec(), err)
	}
	got := filepath.Join(tmp, name)
	if err := Verify(got, p); err != nil {
		return "", err
	}
	if err := os.Rename(got, dst); err != nil {
		return "", fmt.Errorf("fetching %s: %w", p.Spec(), err)
	}
	return dst, nil
}

// packedName reads the file name from `npm pack --json` output: a JSON
// array with one object per package. The name must be a plain file name.
func packedName(out []byte) (string, error) {
	var res []struct {
		Filename string `json:"filename"`
	}
	if err := json.Unmarshal(out, &res); err != nil || len(res) != 1 {
		return "", errors.New("unexpected npm pack --json output")
	}
	n := res[0].Filename
	if n == "" || n != filepath.Base(n) || strings.HasPrefix(n, ".") {
		return "", fmt.Errorf("npm pack produced an unexpected file name %q", n)
	}
	return n, nil
}

// npmCommand finds the npm client the way corral finds its other host
// programs (hostbin: PATH, then the package managers' directories), and
// the PATH to run it with. A menu-bar app started from Finder has
// PATH=/usr/bin:/bin:/usr/sbin:/sbin, which holds no npm; and npm is a
// `#!/usr/bin/env node` script, so node must be on its PATH too.
func npmCommand(pathEnv string, dirs []string) (path, searchPath string, err error) {
	path, err = hostbin.Lookup("npm", pathEnv, dirs, nil)
	if err != nil {
		return "", "", fmt.Errorf("the npm client is not installed: %w", err)
	}
	return path, hostbin.SearchPath(pathEnv, append([]string{filepath.Dir(path)}, dirs...)), nil
}

func runNPM(ctx context.Context, dir string, args ...string) ([]byte, error) {
	path, searchPath, err := npmCommand(os.Getenv("PATH"), hostbin.Dirs)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = append(os.Environ(), "PATH="+searchPath)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		first, _, _ := strings.Cut(strings.TrimSpace(stderr.String()), "\n")
		if len(first) > 200 {
			first = first[:200]
		}
		return nil, fmt.Errorf("npm %s: %w: %s", strings.Join(args, " "), err, first)
	}
	return stdout.Bytes(), nil
}
