package packaging

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// root is the repository root; go test runs in packaging/.
const root = ".."

func readFile(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func loadPlist(t *testing.T, rel string) map[string]any {
	t.Helper()
	m, err := parsePlist(bytes.NewReader(readFile(t, rel)))
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return m
}

func TestInfoPlist(t *testing.T) {
	p := loadPlist(t, "Info.plist")
	want := map[string]any{
		"CFBundleIdentifier":         "dev.corral.Corral",
		"CFBundleExecutable":         "corral",
		"CFBundleName":               "Corral",
		"CFBundlePackageType":        "APPL",
		"CFBundleIconFile":           "Corral",
		"CFBundleShortVersionString": "@VERSION@", // filled by build-app.sh
		"CFBundleVersion":            "@VERSION@",
		"LSMinimumSystemVersion":     "13.0",
		"LSUIElement":                true,
	}
	for k, v := range want {
		if got, ok := p[k]; !ok {
			t.Errorf("Info.plist lacks %s", k)
		} else if got != v {
			t.Errorf("Info.plist %s = %#v, want %#v", k, got, v)
		}
	}
	// macOS shows these in its privacy prompts; without one the access is refused silently.
	for _, k := range []string{"NSAppleEventsUsageDescription", "NSDocumentsFolderUsageDescription", "NSDesktopFolderUsageDescription",
		"NSDownloadsFolderUsageDescription", "NSRemovableVolumesUsageDescription", "NSNetworkVolumesUsageDescription",
		"NSLocalNetworkUsageDescription"} {
		if s, _ := p[k].(string); strings.TrimSpace(s) == "" {
			t.Errorf("Info.plist %s = %#v, want a sentence (macOS shows it in a privacy prompt)", k, p[k])
		}
	}
}

// The names Info.plist uses must be the names build-app.sh creates and
// the cask links.
func TestBundleNamesAgree(t *testing.T) {
	p := loadPlist(t, "Info.plist")
	script := string(readFile(t, "packaging/macos/build-app.sh"))
	cask := string(readFile(t, "packaging/homebrew/corral.rb"))
	exe := "Contents/MacOS/" + p["CFBundleExecutable"].(string)
	icns := "Contents/Resources/" + p["CFBundleIconFile"].(string) + ".icns"
	for _, s := range []string{exe, icns, "Contents/Info.plist"} {
		if !strings.Contains(script, `"$app/`+s+`"`) {
			t.Errorf("build-app.sh does not create %s", s)
		}
	}
	if !strings.Contains(cask, `binary "#{appdir}/Corral.app/`+exe+`"`) {
		t.Errorf("the cask does not link %s as a binary", exe)
	}
	if id := p["CFBundleIdentifier"].(string); !regexp.MustCompile(`quit:\s+"` + regexp.QuoteMeta(id) + `"`).MatchString(cask) {
		t.Errorf("the cask's uninstall quit does not name the bundle id %s", id)
	}
}

func TestEntitlementsAreMinimal(t *testing.T) {
	p := loadPlist(t, "packaging/macos/corral.entitlements")
	want := map[string]any{"com.apple.security.automation.apple-events": true}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("entitlements = %v, want exactly %v (no sandbox: corral runs limactl)", p, want)
	}
}

func TestCask(t *testing.T) {
	cask := string(readFile(t, "packaging/homebrew/corral.rb"))
	for _, re := range []string{
		`(?m)^cask "corral" do$`,
		`(?m)^  depends_on formula: "lima"$`,
		`(?m)^  depends_on macos: ">= :ventura"$`,
		`(?m)^  app "Corral\.app"$`,
		`(?m)^  url "https://example\.test/[^"]*Corral-#\{version\}\.dmg" # set by release$`,
	} {
		if !regexp.MustCompile(re).MatchString(cask) {
			t.Errorf("cask does not match %s", re)
		}
	}
	// ~/.corral holds every box's disk: only zap may remove it, and only
	// after its script stopped every VM under it.
	zap := regexp.MustCompile(`(?s)\n  zap script: \{(.*?)\n      \},\n      trash:  \[(.*?)\]`).FindStringSubmatch(cask)
	if zap == nil || !strings.Contains(zap[2], `"~/.corral"`) {
		t.Errorf("cask: ~/.corral is not in the zap trash list, after zap's script")
	} else if !strings.Contains(zap[1], `"#{HOMEBREW_PREFIX}/bin/limactl"`) || !strings.Contains(zap[1], `stop --force`) || !strings.Contains(zap[1], `$HOME/.corral/lima`) {
		t.Errorf("cask: zap's script does not stop the VMs under corral's Lima home:\n%s", zap[1])
	}
	// Uninstall stops every box and broker with the bundle's binary
	// before Homebrew removes it.
	un := regexp.MustCompile(`(?s)\n  uninstall quit:   "[^"]+",\n            script: \{\n(.*?)\n            \}`).FindStringSubmatch(cask)
	if un == nil || !strings.Contains(un[1], `executable:   "#{appdir}/Corral.app/Contents/MacOS/corral"`) || !strings.Contains(un[1], `args:         ["stop", "--all"]`) {
		t.Errorf("cask: uninstall does not run corral stop --all with the bundle's binary")
	}
	// The docs name the tap.
	if !strings.Contains(cask, "corral-dev/tap") || !strings.Contains(string(readFile(t, "docs/PLATFORMS.md")), "corral-dev/tap") {
		t.Errorf("the cask or docs/PLATFORMS.md does not name the tap")
	}
	if n := strings.Count(cask, `"~/.corral`); n != 1 {
		t.Errorf("cask names ~/.corral %d times, want once (in zap)", n)
	}
	if ruby, err := exec.LookPath("ruby"); err == nil {
		if out, err := exec.Command(ruby, "-c", filepath.Join(root, "packaging/homebrew/corral.rb")).CombinedOutput(); err != nil {
			t.Errorf("ruby -c: %v\n%s", err, out)
		}
	}
}

// desktopEntry reads the [Desktop Entry] group of a .desktop file.
func desktopEntry(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := map[string]string{}
	group := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			group = line
		case group == "[Desktop Entry]":
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Fatalf("%s: bad line %q", path, line)
			}
			m[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return m
}

func validateDesktop(t *testing.T, paths ...string) {
	t.Helper()
	v, err := exec.LookPath("desktop-file-validate")
	if err != nil {
		t.Log("desktop-file-validate not installed (apt-get install desktop-file-utils); checked keys only")
		return
	}
	for _, p := range paths {
		if out, err := exec.Command(v, p).CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
			t.Errorf("desktop-file-validate %s: %v\n%s", p, err, out)
		}
	}
}

func TestDesktopEntries(t *testing.T) {
	menu := filepath.Join(root, "packaging/linux/corral.desktop")
	auto := filepath.Join(root, "packaging/linux/corral-autostart.desktop")
	m := desktopEntry(t, menu)
	for k, v := range map[string]string{"Type": "Application", "Exec": "corral app", "Icon": "corral", "NoDisplay": "false", "Terminal": "false"} {
		if m[k] != v {
			t.Errorf("corral.desktop %s = %q, want %q", k, m[k], v)
		}
	}
	if !slices.Contains(strings.Split(m["Categories"], ";"), "Utility") {
		t.Errorf("corral.desktop Categories = %q, want Utility", m["Categories"])
	}
	a := desktopEntry(t, auto)
	for k, v := range map[string]string{"Type": "Application", "Exec": "corral app", "Icon": "corral"} {
		if a[k] != v {
			t.Errorf("corral-autostart.desktop %s = %q, want %q", k, a[k], v)
		}
	}
	validateDesktop(t, menu, auto)
}

func ourScripts(t *testing.T) []string {
	t.Helper()
	var s []string
	for _, g := range []string{"macos/*.sh", "deb/*.sh", "linux/install.sh"} {
		m, err := filepath.Glob(g)
		if err != nil {
			t.Fatal(err)
		}
		s = append(s, m...)
	}
	if len(s) < 5 {
		t.Fatalf("found only %v", s)
	}
	return s
}

func TestScriptsPassShellcheck(t *testing.T) {
	sc, err := exec.LookPath("shellcheck")
	if err != nil {
		t.Skip("shellcheck not installed (make lint runs it on every script)")
	}
	for _, s := range ourScripts(t) {
		fi, err := os.Stat(s)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode()&0o111 == 0 {
			t.Errorf("%s is not executable", s)
		}
		if out, err := exec.Command(sc, "-x", s).CombinedOutput(); err != nil {
			t.Errorf("shellcheck %s: %v\n%s", s, err, out)
		}
	}
}

// Off macOS the bundle, image and notarization scripts must stop at once
// with a message that says why, before building or touching anything.
func TestMacScriptsRefuseOffMac(t *testing.T) {
	if runtime.GOOS == "darwin" {
		t.Skip("this checks the non-macOS path")
	}
	for _, s := range []string{"macos/build-app.sh", "macos/make-dmg.sh", "macos/notarize.sh"} {
		cmd := exec.Command("bash", s)
		cmd.Env = append(os.Environ(), "DIST="+t.TempDir(), "CORRAL_NOTARY_PROFILE=x")
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stderr, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Errorf("%s: err = %v, want exit status 1", s, err)
		}
		if !strings.Contains(stderr.String(), "macOS") {
			t.Errorf("%s: output %q does not say it needs macOS", s, stderr.String())
		}
	}
}

// makeCmd runs make in the repository root with a private binary path, so
// tests never overwrite bin/corral in the working tree.
func makeCmd(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make not installed")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	cmd := exec.Command("make", append([]string{"--no-print-directory", "GO=" + goBin}, args...)...)
	cmd.Dir = root
	// An outer make (make test) must not pass its flags and level down.
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "MAKEFLAGS=") || strings.HasPrefix(kv, "MAKELEVEL=") || strings.HasPrefix(kv, "MFLAGS=")
	})
	cmd.Env = env
	return cmd
}

func run(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(cmd.Args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

func TestMakeInstallUninstall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds corral")
	}
	dest := t.TempDir()
	bin := filepath.Join(t.TempDir(), "corral")
	run(t, makeCmd(t, "install", "DESTDIR="+dest, "PREFIX=/usr/local", "BIN="+bin))
	man, _ := filepath.Glob(filepath.Join(root, "docs/man/*.1"))
	if len(man) == 0 {
		t.Fatal("no docs/man/*.1")
	}
	want := []string{
		"usr/local/bin/corral",
		"usr/local/bin/corral-guest-conn",
		"usr/local/share/bash-completion/completions/corral",
		"usr/local/share/zsh/site-functions/_corral",
		"usr/local/share/fish/vendor_completions.d/corral.fish",
		"usr/local/share/applications/corral.desktop",
		"usr/local/share/icons/hicolor/256x256/apps/corral.png",
		"etc/xdg/autostart/corral.desktop",
	}
	for _, m := range man {
		want = append(want, "usr/local/share/man/man1/"+filepath.Base(m))
	}
	if got := files(t, dest); !reflect.DeepEqual(got, sorted(want)) {
		t.Errorf("installed files:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(sorted(want), "\n"))
	}
	out := run(t, corralCmd(t, filepath.Join(dest, "usr/local/bin/corral"), "version"))
	if !strings.HasPrefix(out, "corral ") {
		t.Errorf("corral version printed %q", out)
	}
	run(t, makeCmd(t, "uninstall", "DESTDIR="+dest, "PREFIX=/usr/local"))
	if got := files(t, dest); len(got) != 0 {
		t.Errorf("after uninstall these remain: %v", got)
	}
}

// TestDeb builds the .deb with make deb, checks its control data and file
// list, unpacks it with dpkg -x (nothing is installed on this machine) and
// runs the unpacked corral.
func TestDeb(t *testing.T) {
	if testing.Short() {
		t.Skip("builds corral")
	}
	if _, err := exec.LookPath("dpkg-deb"); err != nil {
		t.Skip("dpkg-deb not installed")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: the unpacked tree is checked for root-owned files")
	}
	dist := t.TempDir()
	bin := filepath.Join(t.TempDir(), "corral")
	const version = "v1.2.3-4-gabcdef0"
	out := run(t, makeCmd(t, "deb", "DIST="+dist, "BIN="+bin, "VERSION="+version, "COMMIT=abcdef0"))
	deb := filepath.Join(dist, "corral_1.2.3+4+gabcdef0_amd64.deb")
	if !strings.Contains(out, deb) {
		t.Fatalf("make deb printed %q, want the path %s", out, deb)
	}

	field := func(name string) string {
		return strings.TrimSpace(run(t, exec.Command("dpkg-deb", "--field", deb, name)))
	}
	for k, v := range map[string]string{
		"Package":      "corral",
		"Version":      "1.2.3+4+gabcdef0",
		"Architecture": "amd64",
		"Depends":      "libc6, qemu-system-x86, qemu-utils, openssh-client",
		"Recommends":   "gnome-keyring, libsecret-tools",
	} {
		if got := field(k); got != v {
			t.Errorf("control %s = %q, want %q", k, got, v)
		}
	}
	if conf := run(t, exec.Command("dpkg-deb", "--info", deb, "conffiles")); strings.TrimSpace(conf) != "/etc/xdg/autostart/corral.desktop" {
		t.Errorf("conffiles = %q, want the autostart entry", conf)
	}

	// Every file owned by root:root (--root-owner-group).
	for _, line := range strings.Split(strings.TrimSpace(run(t, exec.Command("dpkg-deb", "--contents", deb))), "\n") {
		if f := strings.Fields(line); len(f) < 2 || f[1] != "root/root" {
			t.Errorf("not root/root: %s", line)
		}
	}

	x := t.TempDir()
	run(t, exec.Command("dpkg", "-x", deb, x))
	for _, p := range []string{
		"usr/bin/corral",
		"usr/bin/corral-guest-conn",
		"usr/share/bash-completion/completions/corral",
		"usr/share/zsh/vendor-completions/_corral",
		"usr/share/fish/vendor_completions.d/corral.fish",
		"usr/share/man/man1/corral.1.gz",
		"usr/share/applications/corral.desktop",
		"usr/share/icons/hicolor/256x256/apps/corral.png",
		"etc/xdg/autostart/corral.desktop",
	} {
		fi, err := os.Stat(filepath.Join(x, p))
		if err != nil {
			t.Errorf("package lacks %s: %v", p, err)
			continue
		}
		if fi.Size() == 0 {
			t.Errorf("%s is empty", p)
		}
	}
	got := run(t, corralCmd(t, filepath.Join(x, "usr/bin/corral"), "version"))
	if !strings.HasPrefix(got, "corral "+version+" (commit abcdef0, linux/amd64)\n") {
		t.Errorf("unpacked corral version printed %q", got)
	}
	comp, err := os.ReadFile(filepath.Join(x, "usr/share/bash-completion/completions/corral"))
	if err != nil || !bytes.Contains(comp, []byte("__start_corral")) {
		t.Errorf("bash completion is not cobra's for corral (err %v)", err)
	}
	validateDesktop(t, filepath.Join(x, "usr/share/applications/corral.desktop"), filepath.Join(x, "etc/xdg/autostart/corral.desktop"))
}

// corralCmd runs an installed corral against an empty state directory, so
// its start-of-command housekeeping never touches the user's boxes.
func corralCmd(t *testing.T, exe string, args ...string) *exec.Cmd {
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), "CORRAL_HOME="+t.TempDir())
	return cmd
}

// files lists the regular files under dir, relative and sorted.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sorted(out)
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// The Lima 1.2.2 smoke run (Makefile E2E_SMOKE) names e2e subtests; a
// renamed subtest would silently drop out of it.
func TestE2ESmokeNamesExist(t *testing.T) {
	mk := string(readFile(t, "Makefile"))
	re := regexp.MustCompile(`(?m)^E2E_SMOKE\s*\?=\s*(.*)$`)
	m := re.FindStringSubmatch(mk)
	if m == nil {
		t.Fatal("Makefile has no E2E_SMOKE")
	}
	top, sub, ok := strings.Cut(strings.ReplaceAll(m[1], "$$", "$"), "/")
	if !ok {
		t.Fatalf("E2E_SMOKE %q has no subtest part", m[1])
	}
	src := e2eSources(t)
	names := func(part string) []string {
		part = strings.TrimSuffix(strings.TrimPrefix(part, "^("), ")$")
		return strings.Split(part, "|")
	}
	for _, n := range names(top) {
		if !strings.Contains(src, "func "+n+"(t *testing.T)") {
			t.Errorf("E2E_SMOKE names test %s, which does not exist", n)
		}
	}
	for _, n := range names(sub) {
		if !strings.Contains(src, `t.Run("`+strings.ReplaceAll(n, "_", " ")+`"`) {
			t.Errorf("E2E_SMOKE names subtest %q, which does not exist", n)
		}
	}
}

// TestE2ELanesCoverTheSuite: test-all splits the Lima 2.2.0 suite between
// two lanes by name (Makefile E2E_SUITE and E2E_SIDE); every top-level
// e2e test runs in exactly one of them, so a new test cannot drop out of
// CI silently.
func TestE2ELanesCoverTheSuite(t *testing.T) {
	mk := string(readFile(t, "Makefile"))
	lane := func(v string) *regexp.Regexp {
		t.Helper()
		m := regexp.MustCompile(`(?m)^test-all: ` + v + ` := (.*)$`).FindStringSubmatch(mk)
		if m == nil {
			t.Fatalf("Makefile: test-all sets no %s", v)
		}
		return regexp.MustCompile(strings.ReplaceAll(m[1], "$$", "$"))
	}
	suite, side := lane("E2E_SUITE"), lane("E2E_SIDE")
	top := regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]*)\(t \*testing\.T\)`)
	n := 0
	for _, m := range top.FindAllStringSubmatch(e2eSources(t), -1) {
		n++
		if a, b := suite.MatchString(m[1]), side.MatchString(m[1]); a == b {
			t.Errorf("e2e test %s: in the first lane %v, in the second %v; want exactly one", m[1], a, b)
		}
	}
	if n < 5 {
		t.Fatalf("found only %d top-level e2e tests", n)
	}
}

// e2eSources is the text of every file of the e2e package, one after the
// other (each ends in a newline, so a line-anchored pattern stays anchored).
func e2eSources(t *testing.T) string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(root, "cmd/corral/e2e"))
	if err != nil {
		t.Fatal(err)
	}
	var src strings.Builder
	for _, e := range ents {
		src.Write(readFile(t, "cmd/corral/e2e/"+e.Name()))
	}
	return src.String()
}
