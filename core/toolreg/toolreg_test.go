package toolreg

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/paths"
)

func reg(entry string, tool Tool, source string) Registry {
	return Registry{Entry: entry, Tool: tool, Source: source}
}

// TestParseFixtures parses each toolchain's output as the guest script
// prints it (testdata/*.txt) and compares the whole result.
func TestParseFixtures(t *testing.T) {
	const home = "/home/u.linux/.cargo/config.toml"
	for _, tc := range []struct {
		file  string
		want  []Registry
		notes []string // substrings, one per note, in order
	}{
		{"npm.txt", []Registry{reg("npm.mirror.example", ToolNPM, "registry")}, nil},
		{"npm-port.txt", []Registry{reg("registry.corp.example:4873", ToolNPM, "registry")}, nil},
		{"go.txt", []Registry{
			reg("goproxy.corp.example", ToolGo, "GOPROXY"),
			reg("goproxy2.corp.example", ToolGo, "GOPROXY"),
			reg("sumdb.corp.example", ToolGo, "GOSUMDB"),
		}, []string{`"direct" fetches from each module's own origin`}},
		{"go-sumdb-url.txt", []Registry{reg("sumdb-mirror.corp.example", ToolGo, "GOSUMDB")}, nil},
		{"pip-default.txt", []Registry{
			reg("index.pkgs.example", ToolPip, "default"),
			reg("files.pkgs.example", ToolPip, "default"),
		}, nil},
		{"pip-config.txt", []Registry{
			reg("pypi.corp.example", ToolPip, "global.index-url"),
			reg("extra1.corp.example", ToolPip, "install.extra-index-url"),
			reg("extra2.corp.example:8443", ToolPip, "install.extra-index-url"),
			reg("extra3.corp.example", ToolPip, "PIP_EXTRA_INDEX_URL"),
		}, nil},
		{"cargo.txt", []Registry{
			reg("crates.corp.example", ToolCargo, home),
			reg("git.corp.example", ToolCargo, home),
		}, nil},
		{"cargo-default.txt", nil, []string{"no source replacement"}},
		{"apt-list.txt", []Registry{
			reg("deb.mirror.example", ToolApt, "/etc/apt/sources.list"),
			reg("apt.corp.example", ToolApt, "/etc/apt/sources.list"),
			reg("apt2.corp.example", ToolApt, "/etc/apt/sources.list"),
		}, []string{`"cdrom:[Debian`, `"file:/srv/local"`}},
		{"apt-deb822.txt", []Registry{
			reg("deb.mirror.example", ToolApt, "/etc/apt/sources.list.d/debian.sources"),
			reg("security.mirror.example", ToolApt, "/etc/apt/sources.list.d/debian.sources"),
			reg("security2.mirror.example", ToolApt, "/etc/apt/sources.list.d/debian.sources"),
			reg("mirrors.corp.example", ToolApt, "/etc/apt/sources.list.d/debian.sources"),
		}, nil},
	} {
		t.Run(tc.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			rec, err := ParseBytes(b)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(rec.Registries, tc.want) {
				t.Errorf("registries:\n%+v\nwant:\n%+v", rec.Registries, tc.want)
			}
			if len(rec.Notes) != len(tc.notes) {
				t.Fatalf("notes %q, want %d", rec.Notes, len(tc.notes))
			}
			for i, n := range tc.notes {
				if !strings.Contains(rec.Notes[i], n) {
					t.Errorf("note %d = %q, want it to contain %q", i, rec.Notes[i], n)
				}
			}
		})
	}
}

// TestParseHostile: credentials, IP literals of every kind, non-http
// schemes, invalid names, unknown tools, stray lines and control
// characters never become entries, and each skip is a note.
func TestParseHostile(t *testing.T) {
	b, err := os.ReadFile("testdata/hostile.txt")
	if err != nil {
		t.Fatal(err)
	}
	b = []byte(strings.ReplaceAll(string(b), `\x1b`, "\x1b"))
	rec, err := ParseBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	want := []Registry{
		reg("ok.evil.example", ToolPip, "global.extra-index-url"),
		reg("a.example", ToolApt, "/etc/apt/sources.list"),
	}
	if !reflect.DeepEqual(rec.Registries, want) {
		t.Errorf("registries:\n%+v\nwant:\n%+v", rec.Registries, want)
	}
	notes := strings.Join(rec.Notes, "\n")
	for _, s := range []string{
		"4 lines of the guest's output were not findings",
		"npm registry: a URL with credentials in it is not recorded",
		`"https://127.0.0.1/": an IP address`, `"https://10.1.2.3:8080/": an IP address`,
		`"https://[::1]/": an IP address`, `"https://169.254.169.254/": an IP address`,
		`"https://93.184.216.34/": an IP address`,
		`"file:///srv/goproxy": only http and https`,
		`"ftp://pypi.evil.example/simple": only http and https`,
		`"https://bad_host!.example/"`,
		`"http://1.2/": not a valid host`,
		`"http://xn--invalid-.example/": not a canonical host name`,
		`\x1b[31mred`,
	} {
		if !strings.Contains(notes, s) {
			t.Errorf("notes lack %q:\n%s", s, notes)
		}
	}
	if strings.ContainsAny(notes, "\x1b\x00") || strings.Contains(notes, "secret") {
		t.Errorf("notes carry raw text:\n%q", notes)
	}
	for _, g := range rec.Registries {
		if strings.Contains(g.Entry, "rogue") {
			t.Errorf("an unknown tool's block was used: %+v", g)
		}
	}
}

func TestParseRefusesOtherOutput(t *testing.T) {
	for _, in := range []string{"", "hello\n@npm registry\n| https://npm.example/\n"} {
		if _, err := ParseBytes([]byte(in)); err == nil {
			t.Errorf("%q parsed", in)
		}
	}
}

// The caps hold: output past MaxOutput is not read, and at most
// MaxEntries entries are kept.
func TestParseCaps(t *testing.T) {
	var b strings.Builder
	b.WriteString(header + "\n@apt /etc/apt/sources.list\n")
	for i := 0; b.Len() < MaxOutput+1000; i++ {
		b.WriteString("| deb https://h" + strings.Repeat("x", 40) + itoa(i) + ".example/ bookworm main\n")
	}
	rec, err := ParseBytes([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Registries) != MaxEntries {
		t.Errorf("%d entries, want the cap %d", len(rec.Registries), MaxEntries)
	}
	notes := strings.Join(rec.Notes, "\n")
	if !strings.Contains(notes, "output was cut") || !strings.Contains(notes, "more than 64 registries") {
		t.Errorf("notes: %s", notes)
	}
	long := header + "\n@npm registry\n| https://" + strings.Repeat("a", MaxBlock+100) + ".example/\n"
	if rec, err := ParseBytes([]byte(long)); err != nil || len(rec.Registries) != 0 {
		t.Errorf("an over-long line: %+v, %v", rec, err)
	}
	many := header + "\n" + strings.Repeat("junk\n", 1000)
	if rec, _ := ParseBytes([]byte(many)); len(rec.Notes) > MaxNotes {
		t.Errorf("%d notes", len(rec.Notes))
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestRecordRoundTrip(t *testing.T) {
	l := paths.Layout{Home: t.TempDir()}
	if _, err := Read(l, "golden-abc"); !errors.Is(err, ErrNoRecord) {
		t.Errorf("no record: %v", err)
	}
	rec := Record{Golden: "golden-abc", Built: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
		Registries: []Registry{reg("npm.mirror.example", ToolNPM, "registry"), reg("npm.mirror.example", ToolApt, "x")}}
	if err := Write(l, rec); err != nil {
		t.Fatal(err)
	}
	got, err := Read(l, "golden-abc")
	if err != nil || got.Version != 1 || !reflect.DeepEqual(got.Registries, rec.Registries) || !got.Built.Equal(rec.Built) {
		t.Errorf("read %+v, %v", got, err)
	}
	if e := got.Entries(); !slices.Equal(e, []string{"npm.mirror.example"}) {
		t.Errorf("entries %v", e)
	}
	for _, bad := range []string{"", "../x", ".hidden", "a/b"} {
		if err := Write(l, Record{Golden: bad}); err == nil {
			t.Errorf("golden %q written", bad)
		}
	}
	// A record file edited to hold a bad entry is refused.
	if err := os.WriteFile(l.GoldenRecord("golden-bad"), []byte(`{"version":1,"golden":"golden-bad","registries":[{"entry":"a b","tool":"npm","source":"x"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(l, "golden-bad"); err == nil {
		t.Error("a bad entry was read")
	}
}
