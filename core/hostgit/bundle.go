package hostgit

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/corral-dev/corral/core/display"
)

// Limits on what a box may send.
const (
	// DefaultMaxBundle caps a bundle's size.
	DefaultMaxBundle = 2 << 30
	// MaxHeader caps the bundle header (the ref list) git parses.
	MaxHeader = 1 << 20
	// MaxRefs caps the branches one pull takes.
	MaxRefs = 10000
	// MaxRefLen caps a ref name.
	MaxRefLen = 1024
)

// ErrBundle marks a bundle refused before git read it.
var ErrBundle = errors.New("refusing the box's bundle")

// Bundle is a bundle file received from a box, checked by ReceiveBundle.
type Bundle struct {
	Path  string
	Size  int64
	Heads []Head // sorted by name
	// Prerequisites are commits the bundle needs the host to have.
	Prerequisites []string
	// ObjectFormat is "sha1" or "sha256" (the v3 capability).
	ObjectFormat string
	// HeaderLen is the header's length in bytes: the pack starts there.
	HeaderLen int64
}

// Head is one branch in a bundle.
type Head struct {
	Name string // full ref name, refs/heads/...
	OID  string
}

// Branch is the name below refs/heads/.
func (h Head) Branch() string { return strings.TrimPrefix(h.Name, "refs/heads/") }

// ReceiveBundle copies a bundle from src (the box's stream) into a new
// file in dir, at most max bytes, and checks its header: version 2 or 3,
// only the object-format capability, only well-formed object names, and
// only refs/heads/* whose names pass CheckRefFormat and are printable. The
// file is removed on any error.
func ReceiveBundle(src io.Reader, dir string, max int64) (b Bundle, err error) {
	f, err := os.CreateTemp(dir, "pull-*.bundle")
	if err != nil {
		return Bundle{}, fmt.Errorf("creating the bundle file: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = cerr
		}
		if err != nil {
			_ = os.Remove(f.Name())
		}
	}()
	n, err := io.Copy(f, io.LimitReader(src, max+1))
	if err != nil {
		return Bundle{}, fmt.Errorf("receiving the box's bundle: %w", err)
	}
	if n > max {
		return Bundle{}, fmt.Errorf("%w: larger than %d bytes", ErrBundle, max)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return Bundle{}, err
	}
	b, err = ParseHeader(f)
	if err != nil {
		return Bundle{}, err
	}
	b.Path, b.Size = filepath.Clean(f.Name()), n
	return b, nil
}

// ParseHeader reads a bundle header (gitformat-bundle) and checks it as
// ReceiveBundle says.
func ParseHeader(r io.Reader) (Bundle, error) {
	br := bufio.NewReaderSize(io.LimitReader(r, MaxHeader), 64<<10)
	var n int64
	line := func() (string, error) {
		s, err := br.ReadString('\n')
		n += int64(len(s))
		if err != nil {
			if errors.Is(err, io.EOF) {
				return "", fmt.Errorf("%w: the header is cut short or longer than %d bytes", ErrBundle, MaxHeader)
			}
			return "", err
		}
		return strings.TrimSuffix(s, "\n"), nil
	}
	sig, err := line()
	if err != nil {
		return Bundle{}, err
	}
	b := Bundle{ObjectFormat: "sha1"}
	switch sig {
	case "# v2 git bundle", "# v3 git bundle":
	default:
		return Bundle{}, fmt.Errorf("%w: not a git bundle (signature %q)", ErrBundle, SafeText(sig, 40))
	}
	seen := map[string]bool{}
	for {
		l, err := line()
		if err != nil {
			return Bundle{}, err
		}
		switch {
		case l == "":
			sort.Slice(b.Heads, func(i, j int) bool { return b.Heads[i].Name < b.Heads[j].Name })
			b.HeaderLen = n
			return b, nil
		case strings.HasPrefix(l, "@"):
			if sig != "# v3 git bundle" {
				return Bundle{}, fmt.Errorf("%w: capability in a v2 bundle", ErrBundle)
			}
			if len(b.Heads)+len(b.Prerequisites) > 0 {
				return Bundle{}, fmt.Errorf("%w: capability after the ref list", ErrBundle)
			}
			if l != "@object-format=sha1" && l != "@object-format=sha256" {
				return Bundle{}, fmt.Errorf("%w: unsupported capability %q", ErrBundle, SafeText(l, 60))
			}
			b.ObjectFormat = strings.TrimPrefix(l, "@object-format=")
		case strings.HasPrefix(l, "-"):
			oid, _, _ := strings.Cut(l[1:], " ")
			if !ValidOID(oid) || len(oid) != 2*b.hashLen() {
				return Bundle{}, fmt.Errorf("%w: malformed prerequisite", ErrBundle)
			}
			b.Prerequisites = append(b.Prerequisites, oid)
		default:
			oid, ref, ok := strings.Cut(l, " ")
			if !ok || !ValidOID(oid) || len(oid) != 2*b.hashLen() {
				return Bundle{}, fmt.Errorf("%w: malformed ref line %q", ErrBundle, SafeText(l, 80))
			}
			if !strings.HasPrefix(ref, "refs/heads/") {
				return Bundle{}, fmt.Errorf("%w: it carries %q; only branches (refs/heads/*) are taken", ErrBundle, SafeText(ref, 80))
			}
			if !CheckRefFormat(ref) || !Printable(ref) {
				return Bundle{}, fmt.Errorf("%w: invalid branch name %q", ErrBundle, SafeText(ref, 80))
			}
			if seen[ref] {
				return Bundle{}, fmt.Errorf("%w: branch %q twice", ErrBundle, SafeText(ref, 80))
			}
			seen[ref] = true
			if len(b.Heads) >= MaxRefs {
				return Bundle{}, fmt.Errorf("%w: more than %d branches", ErrBundle, MaxRefs)
			}
			b.Heads = append(b.Heads, Head{Name: ref, OID: oid})
		}
	}
}

// CheckRefFormat applies git check-ref-format's rules to a full ref name
// (git-check-ref-format(1), without --allow-onelevel or --refspec-pattern).
func CheckRefFormat(ref string) bool {
	if ref == "" || len(ref) > MaxRefLen || ref == "@" || !utf8.ValidString(ref) {
		return false
	}
	if strings.HasSuffix(ref, "/") || strings.HasSuffix(ref, ".") || strings.HasPrefix(ref, "/") {
		return false
	}
	if strings.Contains(ref, "..") || strings.Contains(ref, "@{") || strings.Contains(ref, "//") {
		return false
	}
	if !strings.Contains(ref, "/") {
		return false
	}
	for i := 0; i < len(ref); i++ {
		c := ref[i]
		if c < 0x20 || c == 0x7f || strings.IndexByte(" ~^:?*[\\", c) >= 0 {
			return false
		}
	}
	for _, comp := range strings.Split(ref, "/") {
		if strings.HasPrefix(comp, ".") || strings.HasSuffix(comp, ".lock") {
			return false
		}
	}
	return true
}

// Printable reports whether s shows as itself: valid UTF-8 and no rune
// core/display would escape (controls, bidi and other format runes).
func Printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if display.Unsafe(r) {
			return false
		}
	}
	return true
}

// SafeText is box-written text (a commit subject, a refused name) made
// safe to print: core/display's rule.
func SafeText(s string, max int) string { return display.Text(s, max) }

// Verify runs git bundle verify: the header is well formed and every
// prerequisite commit is in the host repository.
func (r Repo) Verify(ctx context.Context, b Bundle) error {
	if _, err := r.run(ctx, "bundle", "verify", "--quiet", b.Path); err != nil {
		return fmt.Errorf("%w: %w", ErrBundle, err)
	}
	return nil
}
