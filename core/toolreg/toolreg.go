// Package toolreg turns what a golden image's toolchains say about where
// they download from (npm's registry, Go's GOPROXY and GOSUMDB, pip's
// index, cargo's source replacement, apt's sources) into the box's
// "toolchains" egress group, and records it with the golden image.
//
// corral names no registry: the guest script guest/toolchain-registries.sh
// asks each toolchain in the image (a corporate mirror is followed because
// the image says so) and prints raw text. That text comes from a VM and is
// hostile: Parse reads at most MaxOutput bytes, takes only http and https
// URLs whose host is a valid DNS name (egress.ParseAuthority decides; IP
// literals are refused whatever their range), drops userinfo-carrying URLs,
// keeps at most MaxEntries entries, and says in Notes what it skipped.
// Display goes through core/display.
package toolreg

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/corral-dev/corral/core/atomicfile"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/display"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/untrusted"
)

// Limits on what a golden's output can make corral record.
const (
	MaxOutput  = 256 << 10 // bytes of guest output read
	MaxBlock   = 64 << 10  // bytes of one finding
	MaxEntries = 64        // allow-list entries recorded
	MaxNotes   = 32        // notes recorded
	maxSource  = 120       // characters of a source name kept
)

// header is the first line the guest script prints.
const header = "# corral toolchain registries 1"

// Tool is a toolchain whose registries are asked for.
type Tool string

// The tools the guest script asks.
const (
	ToolNPM   Tool = "npm"
	ToolGo    Tool = "go"
	ToolPip   Tool = "pip"
	ToolCargo Tool = "cargo"
	ToolApt   Tool = "apt"
)

var tools = []Tool{ToolNPM, ToolGo, ToolPip, ToolCargo, ToolApt}

// Registry is one allow-list entry and where it was found.
type Registry struct {
	// Entry is an allow-list entry: a host (ports 80 and 443) or host:port.
	Entry string `json:"entry"`
	Tool  Tool   `json:"tool"`
	// Source is the setting or file it came from ("registry", "GOPROXY",
	// "/etc/apt/sources.list"), sanitised.
	Source string `json:"source"`
}

// Record is what a golden image's build recorded.
type Record struct {
	Version    int        `json:"version"`
	Golden     string     `json:"golden"`
	Built      time.Time  `json:"built"`
	Registries []Registry `json:"registries"`
	// Notes say what was skipped and why (sanitised, capped).
	Notes []string `json:"notes,omitempty"`
}

// recordVersion is the format version of a record file.
const recordVersion = 1

// Entries returns the distinct allow-list entries, in the order found.
func (r Record) Entries() []string {
	var out []string
	for _, g := range r.Registries {
		if !slices.Contains(out, g.Entry) {
			out = append(out, g.Entry)
		}
	}
	return out
}

// ErrNoRecord means a golden image has no record: it was built before
// corral recorded toolchain registries, or the box was made without one.
var ErrNoRecord = errors.New("no toolchain registries recorded")

// Read returns the record of golden image name.
func Read(l paths.Layout, name string) (Record, error) {
	path := l.GoldenRecord(name)
	b, err := untrusted.ReadJSON(path, untrusted.State(MaxOutput))
	if errors.Is(err, os.ErrNotExist) {
		return Record{}, fmt.Errorf("golden image %s: %w", name, ErrNoRecord)
	}
	if err != nil {
		return Record{}, fmt.Errorf("reading the record of golden image %s: %w", name, err)
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return Record{}, fmt.Errorf("reading the record of golden image %s (%s): %w", name, path, err)
	}
	if r.Version != recordVersion {
		return Record{}, fmt.Errorf("reading the record of golden image %s (%s): unknown version %d", name, path, r.Version)
	}
	// The file is the host's own, but its entries reach the broker: check
	// them again as Parse does.
	for _, g := range r.Registries {
		if err := checkEntry(g.Entry); err != nil {
			return Record{}, fmt.Errorf("reading the record of golden image %s (%s): %w", name, path, err)
		}
	}
	return r, nil
}

// Write stores the record of its golden image atomically.
func Write(l paths.Layout, r Record) error {
	if r.Golden == "" || strings.ContainsAny(r.Golden, `/\`) || strings.HasPrefix(r.Golden, ".") {
		return fmt.Errorf("recording toolchain registries: invalid golden image name %q", r.Golden)
	}
	r.Version = recordVersion
	if r.Registries == nil {
		r.Registries = []Registry{}
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("recording toolchain registries of %s: %w", r.Golden, err)
	}
	if err := os.MkdirAll(l.GoldensDir(), atomicfile.DirMode); err != nil {
		return fmt.Errorf("recording toolchain registries of %s: %w", r.Golden, err)
	}
	return atomicfile.WriteFile(l.GoldenRecord(r.Golden), append(b, '\n'), atomicfile.FileMode)
}

// finding is one "@TOOL WHAT" block of the guest's output.
type finding struct {
	tool Tool
	what string
	text []string
}

// Parse reads the guest script's output and returns the registries found
// (Golden and Built unset). Output past MaxOutput is not read. It fails
// only when the output is not the script's at all (no header); everything
// else it cannot use becomes a note.
func Parse(r io.Reader) (Record, error) {
	var rec Record
	sc := bufio.NewScanner(io.LimitReader(r, MaxOutput+1))
	sc.Buffer(make([]byte, 0, 4096), MaxBlock+16)
	read := 0
	first := true
	var cur *finding
	var found []finding
	var bad int
	for sc.Scan() {
		line := sc.Text()
		read += len(line) + 1
		if first {
			first = false
			if line != header {
				return rec, fmt.Errorf("toolchain registries: the guest's output does not start with %q", header)
			}
			continue
		}
		switch {
		case strings.HasPrefix(line, "@"):
			tool, what, _ := strings.Cut(line[1:], " ")
			if !slices.Contains(tools, Tool(tool)) {
				bad++
				cur = nil
				continue
			}
			found = append(found, finding{tool: Tool(tool), what: what})
			cur = &found[len(found)-1]
		case line == "|" || strings.HasPrefix(line, "| "):
			if cur == nil {
				bad++
				continue
			}
			cur.text = append(cur.text, strings.TrimPrefix(strings.TrimPrefix(line, "|"), " "))
		default:
			bad++
		}
	}
	if first {
		return rec, errors.New("toolchain registries: the guest printed nothing")
	}
	if err := sc.Err(); err != nil || read > MaxOutput {
		rec.note("the guest's output was cut: longer than %d bytes or a line longer than %d", MaxOutput, MaxBlock)
	}
	if bad > 0 {
		rec.note("%d lines of the guest's output were not findings", bad)
	}
	for _, f := range found {
		switch f.tool {
		case ToolNPM:
			rec.npm(f)
		case ToolGo:
			rec.goEnv(f)
		case ToolPip:
			rec.pip(f)
		case ToolCargo:
			rec.cargo(f)
		case ToolApt:
			rec.apt(f)
		}
	}
	rec.pipDefault(found)
	return rec, nil
}

// note adds a sanitised note, up to MaxNotes.
func (r *Record) note(format string, args ...any) {
	if len(r.Notes) < MaxNotes {
		r.Notes = append(r.Notes, display.Text(fmt.Sprintf(format, args...), 300))
	}
}

// addURL records the host of raw, a URL, found by tool in source.
func (r *Record) addURL(tool Tool, source, raw string) {
	source = display.Text(source, maxSource)
	raw = strings.TrimSpace(raw)
	shown := display.Text(raw, 100)
	u, err := url.Parse(raw)
	if err != nil {
		r.note("%s %s: %q is not a URL; skipped", tool, source, shown)
		return
	}
	port := 0
	switch u.Scheme {
	case "https":
		port = 443
	case "http":
		port = 80
	default:
		r.note("%s %s: %q: only http and https registries are recorded; skipped", tool, source, shown)
		return
	}
	if u.Host == "" || u.Opaque != "" {
		r.note("%s %s: %q is not a URL with a host; skipped", tool, source, shown)
		return
	}
	if u.User != nil {
		r.note("%s %s: a URL with credentials in it is not recorded; skipped", tool, source)
		return
	}
	a, err := egress.ParseAuthority(u.Host, port)
	if err != nil {
		r.note("%s %s: %q: not a valid host; skipped", tool, source, shown)
		return
	}
	if a.IP.IsValid() {
		r.note("%s %s: %q: an IP address, not a host name; allow it with a range in egress if you trust it", tool, source, shown)
		return
	}
	// The name must already be canonical: a registry is recorded as the
	// image names it, never as a different name it maps to (IDNA maps an
	// empty punycode label such as "xn--a-" to "a").
	if want := strings.ToLower(strings.TrimSuffix(u.Hostname(), ".")); a.Host != want && isASCII(want) {
		r.note("%s %s: %q: not a canonical host name; skipped", tool, source, shown)
		return
	}
	r.add(tool, source, a.Host, a.Port)
}

// addHost records a bare host name (GOSUMDB's name form) reached over https.
func (r *Record) addHost(tool Tool, source, host string) {
	r.addURL(tool, source, "https://"+host+"/")
}

func (r *Record) add(tool Tool, source, host string, port int) {
	entry := host
	if port != 80 && port != 443 {
		entry = fmt.Sprintf("%s:%d", host, port)
	}
	if err := checkEntry(entry); err != nil {
		r.note("%s %s: %s is not an allow-list entry; skipped", tool, source, display.Host(host, 100))
		return
	}
	for _, g := range r.Registries {
		if g.Entry == entry && g.Tool == tool && g.Source == source {
			return
		}
	}
	if len(r.Registries) >= MaxEntries {
		if len(r.Registries) == MaxEntries {
			r.note("more than %d registries; the rest are not recorded", MaxEntries)
		}
		return
	}
	r.Registries = append(r.Registries, Registry{Entry: entry, Tool: tool, Source: source})
}

// npm: `npm config get registry` prints one URL.
func (r *Record) npm(f finding) {
	if f.what != "registry" {
		return
	}
	for _, l := range f.text {
		if l = strings.TrimSpace(l); l != "" && l != "undefined" {
			r.addURL(ToolNPM, "registry", l)
		}
	}
}

// goEnv: GOPROXY is a list of URLs, "direct" and "off" separated by "," or
// "|"; GOSUMDB is "off", or "NAME[+KEY] [URL]" (without a URL the database
// is at https://NAME).
func (r *Record) goEnv(f finding) {
	val := strings.TrimSpace(strings.Join(f.text, " "))
	switch f.what {
	case "GOPROXY":
		for _, p := range strings.FieldsFunc(val, func(c rune) bool { return c == ',' || c == '|' }) {
			switch p = strings.TrimSpace(p); p {
			case "", "off":
			case "direct":
				r.note("go GOPROXY: \"direct\" fetches from each module's own origin, which cannot be listed; allow those hosts in egress")
			default:
				r.addURL(ToolGo, "GOPROXY", p)
			}
		}
	case "GOSUMDB":
		fields := strings.Fields(val)
		if len(fields) == 0 || fields[0] == "off" {
			return
		}
		if len(fields) >= 2 {
			r.addURL(ToolGo, "GOSUMDB", fields[1])
			return
		}
		name, _, _ := strings.Cut(fields[0], "+")
		r.addHost(ToolGo, "GOSUMDB", name)
	}
}

// pipKeys are the pip settings that name where packages come from.
var pipKeys = []string{"index-url", "extra-index-url"}

// pip: `pip config list` prints SECTION.KEY='VALUE' lines; the env blocks
// hold PIP_INDEX_URL and PIP_EXTRA_INDEX_URL (space-separated URLs).
func (r *Record) pip(f finding) {
	switch {
	case f.what == "config":
		for _, l := range f.text {
			k, v, ok := strings.Cut(l, "=")
			if !ok {
				continue
			}
			dot := strings.LastIndexByte(k, '.')
			if dot < 0 || !slices.Contains(pipKeys, k[dot+1:]) {
				continue
			}
			v = strings.TrimSpace(v)
			if len(v) >= 2 && (v[0] == '\'' || v[0] == '"') && v[len(v)-1] == v[0] {
				v = v[1 : len(v)-1]
			}
			for _, u := range strings.Fields(v) {
				r.addURL(ToolPip, k, u)
			}
		}
	case f.what == "env PIP_INDEX_URL" || f.what == "env PIP_EXTRA_INDEX_URL":
		for _, u := range strings.Fields(strings.Join(f.text, " ")) {
			r.addURL(ToolPip, strings.TrimPrefix(f.what, "env "), u)
		}
	}
}

// pipDefault: pip's own default index and its file host (the "default"
// block) count only when no index-url is configured.
func (r *Record) pipDefault(found []finding) {
	for _, g := range r.Registries {
		if g.Tool == ToolPip && (g.Source == "PIP_INDEX_URL" || strings.HasSuffix(g.Source, ".index-url")) {
			return
		}
	}
	for _, f := range found {
		if f.tool != ToolPip || f.what != "default" {
			continue
		}
		for _, l := range f.text {
			if l = strings.TrimSpace(l); l != "" {
				r.addURL(ToolPip, "default", l)
			}
		}
	}
}

// cargoConfig is the part of a cargo config file that says where crates
// come from: source replacement and alternative registries.
type cargoConfig struct {
	Source map[string]struct {
		Registry    string `toml:"registry"`
		ReplaceWith string `toml:"replace-with"`
	} `toml:"source"`
	Registries map[string]struct {
		Index string `toml:"index"`
	} `toml:"registries"`
}

// cargo: a config file's [source.*] registry and [registries.*] index
// URLs ("sparse+https://…" or a git https URL). Without source
// replacement cargo uses its built-in registry, which cargo offers no
// stable way to print: that is a note, not a guess.
func (r *Record) cargo(f finding) {
	src := display.Text(f.what, maxSource)
	data := strings.Join(f.text, "\n")
	var c cargoConfig
	if err := config.CheckNesting([]byte(data), maxCargoNesting); err != nil {
		r.note("cargo %s: nested too deep; skipped", src)
		return
	}
	if _, err := toml.Decode(data, &c); err != nil {
		r.note("cargo %s: not a config file cargo would read; skipped", src)
		return
	}
	replaced := false
	for _, name := range sortedKeys(c.Source) {
		s := c.Source[name]
		if s.ReplaceWith != "" {
			replaced = true
		}
		if s.Registry != "" {
			r.addURL(ToolCargo, src, cargoURL(s.Registry))
		}
	}
	for _, name := range sortedKeys(c.Registries) {
		if idx := c.Registries[name].Index; idx != "" {
			r.addURL(ToolCargo, src, cargoURL(idx))
		}
	}
	if !replaced {
		r.note("cargo %s: no source replacement; cargo's built-in registry is not recorded (allow it in egress)", src)
	}
}

// maxCargoNesting bounds a cargo config's nesting before it is parsed
// (the TOML parser is slow on deep nesting).
const maxCargoNesting = 16

// cargoURL strips cargo's protocol prefixes ("sparse+", "registry+",
// "git+").
func cargoURL(s string) string {
	for _, p := range []string{"sparse+", "registry+", "git+"} {
		s = strings.TrimPrefix(s, p)
	}
	return s
}

// apt: one-line sources ("deb [options] URI SUITE [COMPONENT...]") in
// .list files and sources.list, deb822 stanzas ("URIs: A B", continued on
// lines that start with a space) in .sources files. Disabled stanzas
// ("Enabled: no") and non-http URIs (file:, cdrom:, mirror+file:) are
// skipped; a mirror list (mirror+http) is recorded by its own host.
func (r *Record) apt(f finding) {
	src := display.Text(f.what, maxSource)
	if strings.HasSuffix(f.what, ".sources") {
		r.aptDeb822(src, f.text)
		return
	}
	for _, l := range f.text {
		if i := strings.IndexByte(l, '#'); i >= 0 {
			l = l[:i]
		}
		fields := strings.Fields(l)
		if len(fields) < 2 || fields[0] != "deb" && fields[0] != "deb-src" {
			continue
		}
		rest := fields[1:]
		if strings.HasPrefix(rest[0], "[") {
			// Options: "[arch=amd64 signed-by=/k.gpg]", maybe over several fields.
			for len(rest) > 0 && !strings.HasSuffix(rest[0], "]") {
				rest = rest[1:]
			}
			if len(rest) < 2 {
				continue
			}
			rest = rest[1:]
		}
		r.aptURI(src, rest[0])
	}
}

func (r *Record) aptDeb822(src string, lines []string) {
	var uris []string
	enabled := true
	inURIs := false
	flush := func() {
		if enabled {
			for _, u := range uris {
				r.aptURI(src, u)
			}
		}
		uris, enabled, inURIs = nil, true, false
	}
	for _, l := range lines {
		switch {
		case strings.TrimSpace(l) == "":
			flush()
		case strings.HasPrefix(l, "#"):
		case l[0] == ' ' || l[0] == '\t':
			if inURIs {
				uris = append(uris, strings.Fields(l)...)
			}
		default:
			k, v, _ := strings.Cut(l, ":")
			inURIs = strings.EqualFold(strings.TrimSpace(k), "URIs")
			switch {
			case inURIs:
				uris = append(uris, strings.Fields(v)...)
			case strings.EqualFold(strings.TrimSpace(k), "Enabled"):
				enabled = !strings.EqualFold(strings.TrimSpace(v), "no")
			}
		}
	}
	flush()
}

func (r *Record) aptURI(src, uri string) {
	uri = strings.TrimPrefix(uri, "mirror+")
	if strings.HasPrefix(uri, "http://") || strings.HasPrefix(uri, "https://") {
		r.addURL(ToolApt, src, uri)
		return
	}
	r.note("apt %s: %q is not an http or https source; skipped", src, display.Text(uri, 100))
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// ParseBytes is Parse of b.
func ParseBytes(b []byte) (Record, error) { return Parse(bytes.NewReader(b)) }

// checkEntry checks a registry's allow-list entry: one of the one grammar
// (egress.ParseAllowEntry) that names hosts, never a range (a range is a
// config-only entry; a golden's record must not open private networks).
func checkEntry(entry string) error {
	e, err := egress.ParseAllowEntry(entry)
	if err == nil && e.IsRange() {
		err = errors.New("a range is not a registry")
	}
	if err != nil {
		return fmt.Errorf("allow entry %q: %w", entry, err)
	}
	return nil
}
