// Package agentstate decides where a box's agent state lives (the agent's
// settings, hooks, MCP servers, instructions and login) and prepares the
// copy a seeded box starts from.
//
// Claude Code runs commands named in its state (hooks, MCP servers), so a
// state directory one box can write and another reads lets a box plant
// code in every other box. The modes:
//
//   - Seeded (the default): the box's state lives on the box's own disk and
//     starts as a copy of the host-owned template, which corral fills with
//     the first-run settings once and never mounts into any box.
//   - Isolated: the box's own disk, starting empty.
//   - Shared: one host directory mounted writable into every box that opts
//     in. An explicit trusted opt-in; SharedRisk says what it costs.
package agentstate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/corral-dev/corral/core/agent"
	"github.com/corral-dev/corral/core/atomicfile"

	"github.com/corral-dev/corral/core/untrusted"
)

// Mode is the agent_state setting.
type Mode string

const (
	Shared   Mode = "shared"
	Seeded   Mode = "seeded"
	Isolated Mode = "isolated"
)

// ParseMode reads a validated agent_state value; "" is the default.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case Shared, Seeded, Isolated:
		return m, nil
	case "":
		return Seeded, nil
	}
	return "", fmt.Errorf("unknown agent_state %q (want shared, seeded or isolated)", s)
}

// PerBox reports whether each box has its own state (nothing it writes is
// read by another box).
func (m Mode) PerBox() bool { return m != Shared }

// SharedRisk is the risk of the shared mode, stated where it is chosen
// (config docs, `corral up`) and in `corral doctor`.
const SharedRisk = `agent_state = "shared" mounts one host directory writable into every box that uses it: ` +
	`a box working on an untrusted repository can plant a hook, an MCP server or instructions that the next ` +
	`session in another box (another project, with its own secrets and allow-list) runs`

// GuestDir is the agent's state directory in the guest (the wrapper in
// guest/provision/30-agent.sh points CLAUDE_CONFIG_DIR at it).
func GuestDir(agentName string) string { return "/corral/agents/" + agentName }

// Caps of a template copy: the template is host-owned, but a copy into
// every new box should stay small and must not follow links.
const (
	MaxTemplateFiles = 256
	MaxTemplateBytes = 8 << 20
)

// EnsureTemplate writes the agent's first-run files into its template
// directory when the directory does not exist yet. An existing template is
// the user's: corral never rewrites it.
func EnsureTemplate(dir string, a agent.Agent) error {
	if _, err := os.Lstat(dir); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("checking agent template %s: %w", dir, err)
	}
	tmp := dir + ".tmp"
	_ = os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, atomicfile.DirMode); err != nil {
		return fmt.Errorf("creating agent template %s: %w", dir, err)
	}
	for name, body := range a.FirstRun {
		if err := os.WriteFile(filepath.Join(tmp, name), []byte(body), atomicfile.FileMode); err != nil {
			return fmt.Errorf("writing agent template %s: %w", dir, err)
		}
	}
	// A rename makes the template appear whole or not at all.
	if err := os.Rename(tmp, dir); err != nil {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("creating agent template %s: %w", dir, err)
	}
	return nil
}

// ReadTemplate reads the template's regular files (names relative to dir,
// slash-separated). Symbolic links and special files are skipped: a copy
// must carry only what the template holds itself.
func ReadTemplate(dir string) (map[string][]byte, error) {
	files := map[string][]byte{}
	total := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil // directories are walked; links and devices skipped
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if len(files) >= MaxTemplateFiles {
			return fmt.Errorf("more than %d files", MaxTemplateFiles)
		}
		b, err := readCapped(p, MaxTemplateBytes-total)
		if err != nil {
			return err
		}
		total += len(b)
		files[filepath.ToSlash(rel)] = b
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return map[string][]byte{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading agent template %s: %w", dir, err)
	}
	return files, nil
}

// readCapped reads p, at most left bytes, as a regular file without
// blocking: the walk saw a regular file, but one swapped for a FIFO since
// must not hang the copy.
func readCapped(p string, left int) ([]byte, error) {
	b, err := untrusted.ReadFile(p, int64(left))
	if errors.Is(err, untrusted.ErrTooLarge) {
		return nil, fmt.Errorf("template larger than %d bytes", MaxTemplateBytes)
	}
	return b, err
}

// WriteSeed writes a box's copy of the template into dst, a directory that
// must not exist yet (the caller removed any old one, so nothing a box left
// there can redirect the writes), after a.Personalize adjusted it for the
// box's project directory in the guest.
func WriteSeed(dst, template string, a agent.Agent, projectDir string) error {
	files, err := ReadTemplate(template)
	if err != nil {
		return err
	}
	if a.Personalize != nil {
		if err := a.Personalize(files, projectDir); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dst, atomicfile.DirMode); err != nil {
		return fmt.Errorf("creating the agent seed %s: %w", dst, err)
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !validRel(n) {
			continue
		}
		p := filepath.Join(dst, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(p), atomicfile.DirMode); err != nil {
			return fmt.Errorf("writing the agent seed %s: %w", dst, err)
		}
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, atomicfile.FileMode)
		if err != nil {
			return fmt.Errorf("writing the agent seed %s: %w", dst, err)
		}
		_, werr := f.Write(files[n])
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return fmt.Errorf("writing the agent seed %s: %w", dst, werr)
		}
	}
	return nil
}

// validRel accepts clean relative slash paths that stay inside the seed.
func validRel(n string) bool {
	return n != "" && n == path.Clean(n) && !path.IsAbs(n) && n != ".." && !strings.HasPrefix(n, "../")
}
