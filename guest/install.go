package guest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"strings"
)

// Program is one of corral's programs in the guest: the file at Path
// (mode 0755, owned by root) holds Content.
type Program struct {
	Path    string
	Content string
}

// Programs are corral's programs in every box, in the order the installer
// writes them: the session launcher, git's credential helper, the box's
// ends of pull and of the request channel, and what the provision
// scripts' units run.
func Programs() []Program {
	return []Program{
		{LaunchPath, launch},
		{GitCredentialPath, gitCredential},
		{RepoPath, repo},
		{RequestPath, request},
		{GitPath, gitWrapper},
		{GitShadowPath, gitShadow},
		{UnitPath, unit},
		{ApplyNetworkPath, applyNetwork},
		{ApplyProjectPath, applyProject},
		{SuspendPath, suspend},
	}
}

// Installer returns the provision script that writes progs, to run as
// root before every other provision script (they call corral-unit and the
// units run the apply scripts).
//
// One script, not a Lima data file each: Lima copies every data file
// after a `sudo -iu root mkdir -p` (a login shell per file), which under
// TCG costs seconds per file at every boot. Each program is a quoted
// here-document, so its text is written as is, never expanded; the
// terminator is derived from the program's own hash, and a program that
// holds that line anyway is refused (it would end the document early).
func Installer(progs []Program) (string, error) {
	var b strings.Builder
	b.WriteString(`#!/bin/sh
# corral's programs in the box (written by corral from guest/*.sh; see
# guest.Installer). Runs first, at every boot: a program is replaced only
# when its text changed, by a rename, so a running copy keeps its file.
set -eu
umask 022
# put PATH: standard input to PATH, mode 0755.
put() {
	tmp=$(mktemp "$1.XXXXXX")
	cat >"$tmp"
	if cmp -s "$tmp" "$1"; then
		rm -f "$tmp"
	else
		chmod 0755 "$tmp"
		mv -f "$tmp" "$1"
	fi
}
`)
	made := map[string]bool{}
	for _, p := range progs {
		if !strings.HasPrefix(p.Path, "/") || strings.ContainsFunc(p.Path, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-", r))
		}) {
			return "", fmt.Errorf("guest program path %q: want an absolute path of letters, digits and /._-", p.Path)
		}
		if dir := path.Dir(p.Path); !made[dir] {
			made[dir] = true
			fmt.Fprintf(&b, "mkdir -p %s\n", dir)
		}
		if strings.ContainsRune(p.Content, 0) {
			return "", fmt.Errorf("guest program %s: holds a NUL byte, which a here-document cannot carry", p.Path)
		}
		sum := sha256.Sum256([]byte(p.Content))
		end := "CORRAL_END_" + hex.EncodeToString(sum[:8])
		content := p.Content
		if !strings.HasSuffix(content, "\n") {
			content += "\n"
		}
		for line := range strings.SplitSeq(content, "\n") {
			if line == end {
				return "", fmt.Errorf("guest program %s: holds its own here-document terminator %s", p.Path, end)
			}
		}
		fmt.Fprintf(&b, "put %s <<'%s'\n%s%s\n", p.Path, end, content, end)
	}
	return b.String(), nil
}
