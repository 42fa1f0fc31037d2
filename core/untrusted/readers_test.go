package untrusted

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// readCalls are the calls that read a file's bytes without the shape
// check: Go's own readers and this package's raw ones. Every call of one
// in corral's non-test code is listed in rawReaders with why it needs no
// shape check (the bytes are never handed to a TOML, JSON or YAML parser),
// so a new reader of a structured file cannot slip past ReadTOML/ReadJSON.
var readCalls = map[string][]string{
	"os":        {"ReadFile", "Open"},
	"ioutil":    {"ReadFile"},
	"toml":      {"DecodeFile"},
	"untrusted": {"ReadFile", "ReadFileIn", "Open", "ReadTail"},
}

// decodeCalls parse structured text: a function that calls one of them and
// a raw reader reads a file and parses it unchecked.
var decodeCalls = map[string][]string{
	"json": {"Unmarshal", "NewDecoder"},
	"toml": {"Decode", "NewDecoder", "Unmarshal", "DecodeFile"},
	"yaml": {"Unmarshal", "NewDecoder"},
}

// shapeCalls are the shape checks that make a decode in the same function
// safe (core/config's CheckNesting is CheckTOML's depth check).
var shapeCalls = map[string][]string{
	"untrusted": {"CheckJSON", "CheckTOML"},
	"config":    {"CheckNesting"},
}

// rawReaders is every raw read in the tree, "file:function", and why its
// bytes need no shape check. TestEveryReaderBounded fails on a read not
// listed here and on an entry no read matches.
var rawReaders = map[string]string{
	"app/lock_unix.go:acquireLock":                    "a pid in a lock file, 64 bytes, parsed with strconv",
	"core/progress/progress.go:followOnce":            "Lima's host agent log, 1 MiB a poll, scanned for milestone lines (a field read by hand, escaped before display)",
	"core/namerule/start_linux.go:Verify":             "/proc: kernel-made status, children and cmdline, matched by substring",
	"core/golden/provision.go:keepLog":                "the tail of a failed golden's boot log, copied as text to a log of its own",
	"app/terminal/terminal.go:start":                  "/dev/null for a child's stdin",
	"cmd/gendocs/main.go:run":                         "generated docs compared byte for byte (a build tool)",
	"cmd/gendocs/main.go:manPages":                    "generated docs compared byte for byte (a build tool)",
	"core/procinfo/procinfo_linux.go:Argv":            "/proc: kernel-made, split on NUL",
	"core/procinfo/procinfo_linux.go:Read":            "/proc: kernel-made, fields",
	"core/procinfo/procinfo_linux.go:Environ":         "/proc: kernel-made, split on NUL",
	"core/limayaml/mounts.go:ReadInstance":            "lima.yaml (Lima writes it), 1 MiB; go.yaml.in/yaml/v3 refuses nesting past 10,000 itself",
	"core/config/layer.go:readLayerFile":              "a config layer, 256 KiB; Parse runs CheckTOML (checkNesting) before the parser",
	"core/atomicfile/update.go:update":                "raw for Update, shaped by UpdateJSON's check before fn sees it",
	"core/atomicfile/atomicfile.go:WriteFile":         "the directory, opened to fsync it",
	"core/pins/pins.go:Verify":                        "a download, hashed",
	"core/hostgit/stream.go:WriteBranches":            "a git bundle, streamed to git",
	"core/hostgit/pack.go:ScanBundle":                 "a git bundle, scanned as a pack with its own caps",
	"core/hostgit/quarantine.go:indexPack":            "a git bundle, streamed to git",
	"core/hostmem/hostmem_linux.go:readProc":          "/proc/meminfo: kernel-made, fields",
	"core/hostinfo/hostinfo_linux.go:availableMemory": "/proc/meminfo: kernel-made, one field",
	"core/qemu/kvm.go:usable":                         "/proc/cpuinfo: kernel-made, fields",
	"core/qemu/namespace_linux.go:BindReadOnly":       "/proc/self/mountinfo: kernel-made, fields",
	"core/qemu/namespace_linux.go:MountPrivate":       "/proc/self/mountinfo: kernel-made, fields",
	"core/qemu/qemutest/qemutest.go:LimaLaunch":       "test data of a test helper",
	"core/broker/brokertest/squid.go:StartSquid":      "a test helper: the squid it started says it is ready in its own log",
	"core/broker/brokertest/squid.go:Requests":        "a test helper: the access log of the squid it started, as lines",
	"core/broker/brokertest/squid.go:Logs":            "a test helper: the logs of the squid it started, shown in a failure",
	"core/jsonl/jsonl.go:saveKept":                    "a JSON-lines log: read line by line, each line capped (maxLine) and checked by json.Valid",
	"core/jsonl/jsonl.go:openGenerations":             "a JSON-lines log: read line by line, each line capped (maxLine)",
	"core/jsonl/jsonl.go:tailOnce":                    "a JSON-lines log followed (Tail): at most maxTailRead per poll, lines over maxLine skipped, each through Recover",
	"core/lima/instancedir.go:SSHPorts":               "Lima's ssh config, 64 KiB, split into lines",
	"core/egress/readlog.go:reopen":                   "a JSON-lines log followed line by line, each line capped",
	"core/credential/credential.go:loadCA":            "a PEM file, 1 MiB, parsed by crypto/x509",
	"core/gitshadow/guard.go:revert":                  "a watched git file's recorded blob, compared byte for byte",
	"core/gitshadow/guard.go:revertReplaceRefs":       "a watched git file and its recorded blob, compared byte for byte",
	"core/gitshadow/gitlinks.go:IndexGitlinks":        "git's index, binary, parsed with its own caps",
	"core/gitshadow/watch.go:readEntry":               "a watched git file, hashed",
	"core/gitshadow/dirs.go:readPointer":              "a .git file of one line",
	"core/agentstate/agentstate.go:readCapped":        "an agent's template file, copied as bytes",
	"core/box/provision.go:provisionFailure":          "a console log's tail, shown escaped",
	"core/box/lock.go:LockBox":                        "a pid in a lock file, 64 bytes, parsed with strconv",
	"core/box/gitlinks.go:GitlinkDrift":               "a pid file and /proc mountinfo: fields",
	"core/atomicfile/flock.go:procLockHolder":         "/proc/locks: kernel-made, fields",
	"core/atomicfile/flock.go:commandOf":              "/proc/PID/cmdline: kernel-made, split on NUL",
	"core/gitshadow/gitlinks.go:mergeSplitIndex":      "git's shared index, binary, parsed with its own caps",
	"core/namerule/supervise_linux.go:get":            "/proc/TID/mem, kept open per thread: path strings read a page at a time, capped at PATH_MAX",
	"core/project/project.go:readNames":               "a directory, opened to read its entries",
}

// TestEveryReaderBounded enumerates every read of a file in corral's
// non-test Go code and fails on one that bypasses the bounded reader: a
// raw read not in rawReaders, or a function that reads raw and decodes
// TOML, JSON or YAML without a shape check in between.
func TestEveryReaderBounded(t *testing.T) {
	root := filepath.Join("..", "..")
	seen := map[string]bool{}
	var problems []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch {
			case strings.HasPrefix(d.Name(), ".") && rel != ".", d.Name() == "testdata", rel == "core/untrusted", rel == "cmd/corral/e2e":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		names := importNames(f)
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			key := rel + ":" + fn.Name.Name
			var reads, decodes, shaped []string
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				id, ok := sel.X.(*ast.Ident)
				if !ok {
					return true
				}
				pkg := names[id.Name]
				at := fmt.Sprintf("%s:%d %s.%s", rel, fset.Position(call.Pos()).Line, pkg, sel.Sel.Name)
				if slices.Contains(readCalls[pkg], sel.Sel.Name) {
					reads = append(reads, at)
				}
				if slices.Contains(decodeCalls[pkg], sel.Sel.Name) {
					decodes = append(decodes, at)
				}
				if slices.Contains(shapeCalls[pkg], sel.Sel.Name) {
					shaped = append(shaped, at)
				}
				return true
			})
			if len(reads) == 0 {
				continue
			}
			seen[key] = true
			if _, ok := rawReaders[key]; !ok {
				problems = append(problems, fmt.Sprintf("%s: a raw read (%s): use untrusted.ReadJSON or ReadTOML, or list it in rawReaders with why its bytes need no shape check", key, strings.Join(reads, ", ")))
			}
			if len(decodes) > 0 && len(shaped) == 0 {
				problems = append(problems, fmt.Sprintf("%s: reads a file raw (%s) and decodes it (%s) with no shape check", key, strings.Join(reads, ", "), strings.Join(decodes, ", ")))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for key := range rawReaders {
		if !seen[key] {
			problems = append(problems, key+": listed in rawReaders but reads nothing raw (remove it)")
		}
	}
	slices.Sort(problems)
	for _, p := range problems {
		t.Error(p)
	}
}

// importNames maps the names a file uses for its imports to the last
// element of their paths ("os", "json", "toml", "untrusted", ...).
func importNames(f *ast.File) map[string]string {
	m := map[string]string{}
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		last := p[strings.LastIndex(p, "/")+1:]
		if last == "v3" || last == "v2" { // gopkg.in/yaml.v3, module major versions
			last = strings.TrimSuffix(filepath.Base(filepath.Dir(p+"/x")), ".v3")
		}
		if strings.HasPrefix(last, "yaml") {
			last = "yaml"
		}
		name := last
		if imp.Name != nil {
			name = imp.Name.Name
		}
		m[name] = last
	}
	return m
}
