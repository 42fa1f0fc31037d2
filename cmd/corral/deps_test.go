package main

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/corral-dev/corral/"

// TestDependencies keeps core and the CLI free of the GUI libraries: the
// app is a thin client over core, never the other way round.
func TestDependencies(t *testing.T) {
	forbidden := []string{"fyne.io/systray", "github.com/progrium/darwinkit"}
	for _, goos := range []string{"linux", "darwin"} {
		cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}",
			module+"core/...", module+"cmd/corral/cli")
		cmd.Env = append(cmd.Environ(), "GOOS="+goos, "CGO_ENABLED=1", "CC=/nonexistent")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list (%s): %v", goos, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, f := range forbidden {
				if strings.HasPrefix(dep, f) {
					t.Errorf("%s: core or the CLI depends on %s", goos, dep)
				}
			}
		}
	}
}

// floors are corral's layers, lowest first. A package may import packages
// of its own floor and of the floors below, never above. Every package of
// the module has a floor: a new package fails this test until it is given
// one (and named in docs/ARCHITECTURE.md).
var floors = []struct {
	name     string
	packages []string
}{
	// Embedded files, no code of corral's.
	{"data", []string{"guest", "assets"}},
	// Libraries: each provides one mechanism and knows nothing of boxes,
	// config or policy.
	{"libraries", []string{
		"core/atomicfile", "core/display", "core/hint", "core/hostbin", "core/hostinfo", "core/jsonl",
		"core/procinfo", "core/secret", "core/untrusted", "core/version", "core/paths", "core/project",
		"core/lima", "core/qmp", "core/qemu", "core/hostmem", "core/pins", "core/audit", "core/dotgit", "core/progress",
	}},
	// Rules: each owns one rule of corral's (a box's states, the egress
	// decision, trust classes, credential injection, ...).
	{"rules", []string{
		"core/agent", "core/agentstate", "core/boxstate", "core/boxmeta", "core/gitshadow", "core/egress", "core/guestconn",
		"core/config", "core/approval", "core/funnel", "core/limayaml", "core/recent", "core/toolreg",
		"core/hostgit", "core/credential", "core/launchenv", "core/remote", "core/golden",
		"core/namerule", "core/gitwatch", "core/review",
	}},
	// Services: the lifecycle, and the program modes started by corral or
	// Lima (the broker, the qemu wrapper).
	{"services", []string{"core/box", "core/broker", "core/qemuwrap", "core/remotebox"}},
	// Fronts: parse, call core once, show.
	{"fronts", []string{
		"cmd/corral/cli", "app", "app/menu", "app/tray", "app/notify", "app/terminal", "app/picker", "app/opener",
	}},
	// Programs, and the tests of the packaging.
	{"programs", []string{"cmd/corral", "cmd/corral-guest-conn", "cmd/gendocs", "cmd/darwincheck", "cmd/genassets", "packaging"}},
}

// narrower are packages held to less than their floor allows: what they
// may import of the module, all of it.
var narrower = map[string][]string{
	// qemu runs it per guest connection: it must start in a fraction of
	// corral's time (BenchmarkGuestConnProcess).
	"core/guestconn":        {"core/paths", "core/untrusted"},
	"cmd/corral-guest-conn": {"core/guestconn"},
	// The state machine is imported by the app and the broker without the
	// lifecycle.
	"core/boxstate": {"core/lima"},
	// A box's identity and metadata: read by the broker, the qemu wrapper
	// and the app without the lifecycle, so it stays low.
	"core/boxmeta": {
		"core/agent", "core/agentstate", "core/atomicfile", "core/boxstate", "core/config", "core/display",
		"core/hint", "core/hostinfo", "core/paths", "core/project", "core/untrusted",
	},
	// The menu is pure: state in, tree out.
	"app/menu": {"core/boxstate", "core/display", "core/egress"},
}

// apart are packages of one floor that must not import another of it: the
// program modes started by corral or Lima read a box through core/boxmeta,
// never through the lifecycle (core/box imports them: the broker's argv,
// the qemu wrapper's link name).
var apart = map[string][]string{
	"core/broker":   {"core/box"},
	"core/qemuwrap": {"core/box"},
}

// TestLayers checks every import between the module's packages (tests
// aside) against floors and narrower.
func TestLayers(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, e := range layerErrors(string(out)) {
		t.Error(e)
	}
}

// TestLayersLifecycleApart: the broker and the qemu wrapper do not reach the
// lifecycle through anything, their tests included.
func TestLayersLifecycleApart(t *testing.T) {
	for pkg, deny := range apart {
		out, err := exec.Command("go", "list", "-deps", "-test", "-f", "{{.ImportPath}}", module+pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			dep, _, _ = strings.Cut(dep, " ")
			for _, d := range deny {
				if dep == module+d {
					t.Errorf("%s (or its tests) depends on %s: read a box through core/boxmeta", pkg, d)
				}
			}
		}
	}
}

// TestLayersCatch: each kind of violation is caught (the check is not
// vacuous).
func TestLayersCatch(t *testing.T) {
	for listing, want := range map[string]string{
		module + "core/paths " + module + "core/box":                   "a floor imports only its own and lower floors",
		module + "core/newthing fmt":                                   "has no floor",
		module + "core/box " + module + "core/box/boxtest":             "test-only package",
		module + "core/guestconn " + module + "core/config":            "it may import only",
		module + "core/broker " + module + "core/box":                  "must not import",
		module + "core/qemuwrap " + module + "core/box":                "must not import",
		module + "core/boxmeta " + module + "core/lima":                "it may import only",
		module + "core/box " + module + "core/broker":                  "",
		module + "cmd/corral/cli " + module + "app/menu":               "do not import each other",
		module + "app " + module + "cmd/corral/cli":                    "do not import each other",
		module + "core/egress os " + module + "core/display":           "",
		module + "core/box/boxtest " + module + "cmd/corral/cli":       "",
		module + "cmd/corral " + module + "app " + module + "core/box": "",
	} {
		errs := layerErrors(listing)
		if got := strings.Join(errs, "\n"); (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("%q: errors %q, want %q", listing, got, want)
		}
	}
}

// layerErrors checks a `go list` listing (a package and its imports per
// line). Test-only packages (named ...test) may import anything and are
// imported by tests alone.
func layerErrors(listing string) []string {
	floorOf := map[string]int{}
	for i, f := range floors {
		for _, p := range f.packages {
			floorOf[p] = i
		}
	}
	testOnly := func(p string) bool { return strings.HasSuffix(p[strings.LastIndex(p, "/")+1:], "test") }
	front := func(p, name string) bool { return p == name || strings.HasPrefix(p, name+"/") }
	var errs []string
	for _, line := range strings.Split(strings.TrimSpace(listing), "\n") {
		fields := strings.Fields(line)
		pkg, ok := strings.CutPrefix(fields[0], module)
		if !ok || front(pkg, "cmd/corral/e2e") || testOnly(pkg) {
			continue
		}
		from, ok := floorOf[pkg]
		if !ok {
			errs = append(errs, pkg+" has no floor: add it to floors in this test and to docs/ARCHITECTURE.md")
			continue
		}
		for _, imp := range fields[1:] {
			dep, ok := strings.CutPrefix(imp, module)
			if !ok {
				continue
			}
			if to, known := floorOf[dep]; testOnly(dep) {
				errs = append(errs, pkg+" imports the test-only package "+dep)
			} else if known && to > from {
				errs = append(errs, fmt.Sprintf("%s (floor %s) imports %s (floor %s): a floor imports only its own and lower floors",
					pkg, floors[from].name, dep, floors[to].name))
			}
			if slices.Contains(apart[pkg], dep) {
				errs = append(errs, fmt.Sprintf("%s imports %s: it must not import the lifecycle (read a box through core/boxmeta)", pkg, dep))
			}
			if allowed, ok := narrower[pkg]; ok && !slices.Contains(allowed, dep) {
				errs = append(errs, fmt.Sprintf("%s imports %s: it may import only %s", pkg, dep, strings.Join(allowed, ", ")))
			}
			// The CLI and the app are two fronts over core: main hands
			// app.Main to the CLI.
			if (front(pkg, "cmd/corral/cli") && front(dep, "app")) || (front(pkg, "app") && front(dep, "cmd")) {
				errs = append(errs, pkg+" imports "+dep+": the CLI and the app do not import each other")
			}
		}
	}
	return errs
}

// TestArchitectureNamesEveryPackage: docs/ARCHITECTURE.md's package list
// (the block under "## Packages": a line that does not start with a blank
// begins with one or more packages, comma-separated, then its description)
// names every package of the module and nothing that is not one, and every
// package named in floors exists.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	doc, err := os.ReadFile("../../docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(doc), "## Packages\n")
	if !ok {
		t.Fatal("ARCHITECTURE.md has no Packages section")
	}
	if _, block, ok = strings.Cut(block, "```\n"); ok {
		block, _, ok = strings.Cut(block, "```")
	}
	if !ok {
		t.Fatal("the Packages section has no code block")
	}
	named := map[string]bool{}
	for _, line := range strings.Split(block, "\n") {
		if line == "" || line[0] == ' ' {
			continue
		}
		// The first word, and each word after one that ends in a comma.
		for _, w := range strings.Fields(line) {
			p, more := strings.CutSuffix(w, ",")
			named[p] = true
			if !more {
				break
			}
		}
	}
	out, err := exec.Command("go", "list", "-e", "-tags", "e2e", "-f", "{{.ImportPath}}", module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	tree := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		p = strings.TrimPrefix(p, module)
		tree[p] = true
		if !named[p] {
			t.Errorf("docs/ARCHITECTURE.md does not name %s: add it to the Packages list with the one rule it owns", p)
		}
	}
	for p := range named {
		if !tree[p] {
			t.Errorf("docs/ARCHITECTURE.md names %s, which is not a package of the module", p)
		}
	}
	for _, f := range floors {
		for _, p := range f.packages {
			if !tree[p] {
				t.Errorf("floor %s names %s, which is not a package of the module", f.name, p)
			}
		}
	}
}

// darwinKitAllowed are the darwinkit packages a darwin corral may link:
// the Objective-C runtime bridge (objc, with its libffi binding) and
// Grand Central Dispatch's main queue. Every AppKit, Foundation or
// UserNotifications call goes through objc.GetClass and objc.Call
// (app/picker/picker_darwin.go, app/notify/un_darwin.go).
var darwinKitAllowed = map[string]bool{
	"github.com/progrium/darwinkit/objc":     true,
	"github.com/progrium/darwinkit/objc/ffi": true,
	"github.com/progrium/darwinkit/dispatch": true,
}

// TestDependenciesDarwinKit keeps darwinkit's framework packages out of
// the darwin binary. The app and the CLI are one binary, so what it links
// every corral process loads, `corral version` included: each
// darwinkit/macos/* package adds a `-framework` load and runs
// objc_getClass for each of its classes at init (macos/appkit and
// macos/foundation alone: about 560 calls), and macos/appkit drags in
// CloudKit, CoreML, Metal, CoreImage, CoreData, QuartzCore and more.
// docs/PLATFORMS.md says how to measure start-up on a Mac.
func TestDependenciesDarwinKit(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", module+"cmd/corral")
	cmd.Env = append(cmd.Environ(), "GOOS=darwin", "GOARCH=arm64", "CGO_ENABLED=1", "CC=/nonexistent")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var seen int
	for _, dep := range strings.Fields(string(out)) {
		if !strings.HasPrefix(dep, "github.com/progrium/darwinkit/") {
			continue
		}
		seen++
		if !darwinKitAllowed[dep] {
			t.Errorf("the darwin corral binary links %s: each darwinkit framework package adds a framework load and its class lookups at init to every corral process, even `corral version`; call the API through darwinkit/objc (objc.GetClass, objc.Call) as app/picker/picker_darwin.go does, or add the package to darwinKitAllowed with the start-up it costs (docs/PLATFORMS.md)", dep)
		}
	}
	if seen == 0 {
		t.Error("no darwinkit package in the darwin dependencies of cmd/corral: the test no longer sees the app (a moved package?)")
	}
}

// TestNoAppBuild: the corral_noapp build (a CLI-only binary, for timing
// `corral version` without the app's frameworks on a Mac) links neither
// systray nor darwinkit; the default build links both on darwin.
func TestNoAppBuild(t *testing.T) {
	gui := func(tags string) []string {
		t.Helper()
		cmd := exec.Command("go", "list", "-deps", "-tags", tags, "-f", "{{.ImportPath}}", module+"cmd/corral")
		cmd.Env = append(cmd.Environ(), "GOOS=darwin", "GOARCH=arm64", "CGO_ENABLED=1", "CC=/nonexistent")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -tags %q: %v", tags, err)
		}
		var found []string
		for _, dep := range strings.Fields(string(out)) {
			if strings.HasPrefix(dep, "fyne.io/systray") || strings.HasPrefix(dep, "github.com/progrium/darwinkit") || dep == module+"app" {
				found = append(found, dep)
			}
		}
		return found
	}
	if got := gui("corral_noapp"); len(got) != 0 {
		t.Errorf("the corral_noapp build links %v", got)
	}
	if got := gui(""); len(got) == 0 {
		t.Error("the default build links no app: the test no longer tells anything")
	}
}
