package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/corral-dev/corral/core/atomicfile"
)

// ErrNotClone: a trusted layer sets a source other than "clone" for a
// project that must be one.
var ErrNotClone = errors.New(`the project's trusted layer sets source to something other than "clone"`)

// EnsureClone makes the trusted layer at path say source = "clone": a
// project another machine sent to this one is a clone (docs/REMOTE.md),
// never mounted, so the box never writes the directory that later sends
// update. A layer that already says so is left as it is; one that sets
// another source is refused (ErrNotClone), never rewritten; a layer that
// has problems is refused too. Otherwise the statement is added before the
// first table with a comment naming who and when, the rest of the file
// kept byte for byte, under the file's lock, and the result must decode
// with source = "clone" or nothing is written. written says whether the
// file changed.
func EnsureClone(path, who string, now time.Time) (written bool, err error) {
	if err := os.MkdirAll(filepath.Dir(path), atomicfile.DirMode); err != nil {
		return false, fmt.Errorf("creating the directory of %s: %w", path, err)
	}
	unlock, err := atomicfile.Lock(path + atomicfile.LockSuffix)
	if err != nil {
		return false, err
	}
	defer unlock()
	data, err := readLayerFile(path)
	if err != nil {
		return false, err
	}
	old, err := Parse(KindTrusted, path, data)
	if err != nil {
		return false, fmt.Errorf("setting source = \"clone\" in %s: the file has problems; fix it first: %w", path, err)
	}
	switch {
	case old.Config.Source == nil:
	case *old.Config.Source == SourceClone:
		return false, nil
	default:
		return false, fmt.Errorf("%s sets source = %q: %w", path, *old.Config.Source, ErrNotClone)
	}
	stmt := fmt.Sprintf("# %s %s: a project sent from another machine is a clone (docs/REMOTE.md)\n%s\n",
		who, now.UTC().Format("2006-01-02"), tomlLine("source", SourceClone))
	at := firstTable(data)
	head := data[:at]
	var out []byte
	out = append(out, head...)
	if len(head) > 0 && head[len(head)-1] != '\n' {
		out = append(out, '\n')
	}
	out = append(append(out, stmt...), data[at:]...)
	again, err := Parse(KindTrusted, path, out)
	if err != nil || again.Config.Source == nil || *again.Config.Source != SourceClone {
		return false, errors.Join(fmt.Errorf("setting source = \"clone\" in %s: could not edit it safely; add the line by hand: source = \"clone\"", path), err)
	}
	if err := errors.Join(validate(again)...); err != nil {
		return false, fmt.Errorf("setting source = \"clone\" in %s (nothing was written): the file would not validate: %w", path, err)
	}
	if err := atomicfile.WriteFile(path, out, atomicfile.FileMode); err != nil {
		return false, err
	}
	return true, nil
}
