// Package dotgit is the one home of the rule "git would take this name for
// .git" (or .gitmodules): git's own fsck rules for HFS+ and NTFS
// (is_hfs_dotgit, is_ntfs_dotgit and their .gitmodules forms), made
// stricter where that was simpler: every Unicode case fold counts. The pull
// check (core/hostgit), the qemu name rule (core/namerule) and the
// event-driven guard (core/gitshadow) all ask it.
package dotgit

import (
	"strings"
	"unicode/utf8"
)

// hfsIgnorable are the code points HFS+ ignores in a name (git's
// next_hfs_char).
func hfsIgnorable(r rune) bool {
	switch r {
	case 0x200c, 0x200d, 0x200e, 0x200f,
		0x202a, 0x202b, 0x202c, 0x202d, 0x202e,
		0x206a, 0x206b, 0x206c, 0x206d, 0x206e, 0x206f,
		0xfeff:
		return true
	}
	return false
}

// isHFSDot reports whether name, without the code points HFS+ ignores, is
// "." + needle in any case. HFS+ stores invalid UTF-8 percent-encoded, so
// such a name is none of these (git's rule too).
func isHFSDot(name, needle string) bool {
	if !utf8.ValidString(name) {
		return false
	}
	var b strings.Builder
	for _, r := range name {
		if !hfsIgnorable(r) {
			b.WriteRune(r)
		}
	}
	return strings.EqualFold(b.String(), "."+needle)
}

// onlySpacesAndDots is the rest of an NTFS name after a match: NTFS drops
// trailing spaces and periods, and ":" starts an alternate data stream.
func onlySpacesAndDots(rest string) bool {
	for i := 0; i < len(rest); i++ {
		switch rest[i] {
		case ':':
			return true
		case ' ', '.':
		default:
			return false
		}
	}
	return true
}

// isNTFSDot is git's is_ntfs_dot_generic: ".needle", the regular short
// name (first six letters, "~1" to "~4") and the fall-back short name
// (shortPrefix, "~" and digits), each with trailing spaces, periods or a
// stream name.
func isNTFSDot(name, needle, shortPrefix string) bool {
	if len(name) > len(needle) && name[0] == '.' && strings.EqualFold(name[1:1+len(needle)], needle) {
		return onlySpacesAndDots(name[1+len(needle):])
	}
	if len(name) >= 8 && strings.EqualFold(name[:6], needle[:6]) && name[6] == '~' && name[7] >= '1' && name[7] <= '4' {
		return onlySpacesAndDots(name[8:])
	}
	// The fall-back short name: up to six letters of shortPrefix, "~",
	// a digit 1-9, more digits, eight characters in all.
	if len(name) < 8 {
		return false
	}
	sawTilde := false
	for i := 0; i < 8; i++ {
		c := name[i]
		switch {
		case sawTilde:
			if c < '0' || c > '9' {
				return false
			}
		case c == '~':
			i++
			if i >= 8 || name[i] < '1' || name[i] > '9' {
				return false
			}
			sawTilde = true
		case i >= 6 || c&0x80 != 0:
			return false
		case lowerASCII(c) != shortPrefix[i]:
			return false
		}
	}
	return sawTilde && onlySpacesAndDots(name[8:])
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// Is reports whether name is a name some file system resolves to .git: git's
// is_hfs_dotgit and is_ntfs_dotgit (".git", "git~1", trailing spaces,
// periods or a stream name), plus any case fold.
func Is(name string) bool {
	if isHFSDot(name, "git") {
		return true
	}
	lower := strings.ToLower(name)
	for _, p := range []string{".git", "git~1"} {
		if strings.HasPrefix(lower, p) && onlySpacesAndDots(lower[len(p):]) {
			return true
		}
	}
	return false
}

// IsModules reports whether name is a name some file system resolves to
// .gitmodules (git's is_hfs_dotgitmodules and is_ntfs_dotgitmodules).
func IsModules(name string) bool {
	return isHFSDot(name, "gitmodules") || isNTFSDot(name, "gitmodules", "gi7eba")
}
