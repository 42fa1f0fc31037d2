// Package project turns a project directory into its box identity: the
// absolute, symlink-free project path and the box name derived from it.
package project

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"

	"golang.org/x/text/unicode/norm"
)

// MaxSockPath is the longest Unix socket path macOS accepts (sun_path is
// 104 bytes including the NUL terminator; Linux allows 108).
const MaxSockPath = 103

// longestSock is the longest socket name Lima creates in an instance
// directory: ssh appends a dot and 16 random characters to its ControlPath
// while it sets the master up (Lima's filenames.LongestSock).
const longestSock = "ssh.sock.1234567890123456"

// maxNameLen keeps lima-<box> a valid hostname label (63 bytes).
const maxNameLen = 63 - len("lima-")

// hashLen is the number of hex digits of the path hash in a box name.
const hashLen = 6

// ErrNameTooLong means no box name fits the socket path limit.
var ErrNameTooLong = errors.New("box name does not fit the socket path limit")

// Project is a resolved project directory and its box.
type Project struct {
	Dir string // absolute path with every symlink resolved
	Box string // Lima instance name
}

// Resolve resolves dir (relative to the working directory) and names its
// box. limaHome is the LIMA_HOME the box will live under; it bounds the
// name length.
func Resolve(dir, limaHome string) (Project, error) {
	abs, err := ResolveDir(dir)
	if err != nil {
		return Project{}, err
	}
	box, err := BoxName(abs, limaHome)
	if err != nil {
		return Project{}, err
	}
	return Project{Dir: abs, Box: box}, nil
}

// ResolveDir returns the absolute, symlink-free form of an existing
// directory.
func ResolveDir(dir string) (string, error) {
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("resolving project directory %q: %w", dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("resolving project directory %q: %w", dir, err)
	}
	st, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("resolving project directory %q: %w", dir, err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("project %q is not a directory", dir)
	}
	if caseFolds {
		real = CanonicalCase(real, readNames)
	}
	return real, nil
}

// caseFolds: the platform's default file system ignores case (APFS and
// HFS+ as macOS formats them), so ~/src/Web and ~/src/web are one folder
// and must be one box; it also ignores the Unicode normalisation of names
// (APFS and HFS+ match "é" as one code point, NFC, and as "e" plus a
// combining accent, NFD: a path typed in Terminal and one from Finder or
// a script may differ so), so those spellings must be one box too.
// filepath.EvalSymlinks keeps the spelling it was given. A Linux file
// system compares bytes: two spellings are two folders there, and are
// left alone.
const caseFolds = runtime.GOOS == "darwin"

// readNames lists a directory's entry names.
func readNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// CanonicalCase returns the absolute, existing path p with each component
// spelled as its directory lists it (names reads a directory), in Unicode
// NFC, so that every spelling of a folder on a case- and
// normalisation-insensitive volume gives one path: other capitals, and
// NFC or NFD. A component keeps its spelling (in NFC) when the directory
// lists it exactly (on a case-sensitive volume that is always so) or when
// it cannot be read. The NFC path names the same folder on APFS and HFS+,
// which match names in any normalisation; the box name is derived from it.
func CanonicalCase(p string, names func(dir string) ([]string, error)) string {
	return norm.NFC.String(canonicalCase(p, names))
}

func canonicalCase(p string, names func(dir string) ([]string, error)) string {
	vol := filepath.VolumeName(p)
	rest := strings.TrimPrefix(p[len(vol):], string(filepath.Separator))
	if rest == "" {
		return p
	}
	cur := vol + string(filepath.Separator)
	for _, c := range strings.Split(rest, string(filepath.Separator)) {
		if ents, err := names(cur); err == nil {
			c = canonicalName(c, ents)
		}
		cur = filepath.Join(cur, c)
	}
	return cur
}

// canonicalName is name as the directory listing entries spells it: name
// itself when listed, else the one entry equal to it ignoring case and
// Unicode normalisation, else name (none, or several: a case-sensitive
// volume that has both).
func canonicalName(name string, entries []string) string {
	match := ""
	nfc := norm.NFC.String(name)
	for _, e := range entries {
		if e == name {
			return name
		}
		if strings.EqualFold(norm.NFC.String(e), nfc) {
			if match != "" {
				return name
			}
			match = e
		}
	}
	if match == "" {
		return name
	}
	return match
}

// BoxName derives the default box name of an absolute project path:
// <slug of the directory name>-<first 6 hex of sha256(path)>. The slug is
// shortened so that every Lima socket path under limaHome stays within
// MaxSockPath; the hash keeps shortened names distinct.
func BoxName(absDir, limaHome string) (string, error) {
	sum := sha256.Sum256([]byte(absDir))
	suffix := "-" + hex.EncodeToString(sum[:])[:hashLen]
	budget := MaxNameLen(limaHome)
	room := budget - len(suffix)
	if room < 1 {
		return "", nameErr(limaHome, budget)
	}
	slug := Slug(filepath.Base(absDir))
	if len(slug) > room {
		slug = strings.TrimRight(slug[:room], "-")
	}
	if slug == "" {
		slug = "box"
		if len(slug) > room {
			slug = slug[:room]
		}
	}
	return slug + suffix, nil
}

// MaxNameLen is the longest box name whose Lima sockets fit under
// limaHome, and never more than a hostname label allows.
func MaxNameLen(limaHome string) int {
	n := MaxSockPath - len(limaHome) - 2 - len(longestSock) // two path separators
	return min(n, maxNameLen)
}

var nameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`) })

// CheckName validates a box name given by the user (or a stored one): the
// same alphabet as derived names, and within the socket path limit. A name
// is never silently truncated, since two truncated names could collide.
func CheckName(name, limaHome string) error {
	if !nameRe().MatchString(name) {
		return fmt.Errorf("invalid box name %q: use lowercase letters, digits and single dashes", name)
	}
	if budget := MaxNameLen(limaHome); len(name) > budget {
		return nameErr(limaHome, budget)
	}
	return nil
}

func nameErr(limaHome string, budget int) error {
	return fmt.Errorf("%w: under %s a box name may have at most %d bytes\n"+
		"hint: set CORRAL_HOME to a shorter directory (Lima's sockets must stay below %d bytes)",
		ErrNameTooLong, limaHome, max(budget, 0), MaxSockPath+1)
}

// Slug lowercases s and keeps [a-z0-9], turning every other run of
// characters into a single dash. Non-ASCII letters are dropped rather than
// transliterated, so the result does not depend on locale tables.
func Slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
		default:
			dash = true
		}
	}
	return b.String()
}

// SameDir compares two directories, following symbolic links if the names
// differ.
func SameDir(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}
