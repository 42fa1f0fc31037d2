package box

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/corral-dev/corral/core/atomicfile"
	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/lima"
)

// Snapshots keep the disk of a stopped box so that it can be rolled back.
//
// A snapshot is always of a stopped box, and a restore always goes to a
// stopped box. That is a rule, not a limitation of the backends: a running
// guest has the project mounted from the host (9p or virtiofs) and holds
// cached metadata, open files and dirty pages of it. Loading a running
// guest's state (qemu's loadvm) would bring back a kernel whose view of the
// project mount is from the past, and it would write that stale view back
// into the host's files. Restoring only the disk of a stopped box means the
// next boot mounts the project afresh. Never restore a guest while its
// project mount could be stale.
//
// Backends:
//
//   - qemu: Lima's snapshots (`limactl snapshot`). For a stopped instance
//     Lima 1.2.2 runs `qemu-img snapshot -c|-a|-d|-l` on the instance's
//     diffdisk: internal qcow2 snapshots, disk only, kept inside the
//     diffdisk file itself (pkg/driver/qemu/qemu.go execImgCommand).
//   - vz: Lima has no snapshots. corral clones the disk (and the EFI
//     variable store) with clonefile(2), a copy-on-write copy that costs no
//     space until the disk diverges, into ~/.corral/snapshots/<box>/<name>/.
//     macOS only (snapshot_darwin.go).

// AutoSnapshotPrefix starts the names of automatic snapshots, followed by
// the UTC time: auto-20260102T150405Z. Users may not take names with it.
const AutoSnapshotPrefix = "auto-"

const autoTimeLayout = "20060102T150405Z"

// ErrBoxRunning means an operation needs a stopped box.
var ErrBoxRunning = errors.New("box is running")

// ErrNoSnapshot means the box has no snapshot of that name.
var ErrNoSnapshot = errors.New("no such snapshot")

// Snapshot is one snapshot of a box.
type Snapshot struct {
	Name string `json:"name"`
	// Created is known for automatic snapshots (from the name) and for
	// clone snapshots (from the directory); zero otherwise.
	Created time.Time `json:"created,omitzero"`
	Auto    bool      `json:"auto"`
}

// snapshotter is one way of keeping snapshots of a stopped box's disk.
type snapshotter interface {
	list(ctx context.Context, box string) ([]Snapshot, error)
	create(ctx context.Context, box, name string) error
	apply(ctx context.Context, box, name string) error
	remove(ctx context.Context, box, name string) error
}

var snapNameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`) })

// CheckSnapshotName validates a snapshot name a user gives.
func CheckSnapshotName(name string) error {
	if !snapNameRe().MatchString(name) {
		return fmt.Errorf("invalid snapshot name %q: use up to 63 letters, digits, '.', '_' and '-', starting with a letter or digit", name)
	}
	if name == SuspendTag {
		return fmt.Errorf("invalid snapshot name %q: corral keeps a saved box's state under it", name)
	}
	if strings.HasPrefix(name, AutoSnapshotPrefix) {
		return fmt.Errorf("invalid snapshot name %q: names starting with %s are for automatic snapshots", name, AutoSnapshotPrefix)
	}
	return nil
}

// AutoSnapshotName is the name of an automatic snapshot taken at t.
func AutoSnapshotName(t time.Time) string {
	return AutoSnapshotPrefix + t.UTC().Format(autoTimeLayout)
}

// snapshotOf describes a snapshot name.
func snapshotOf(name string) Snapshot {
	sn := Snapshot{Name: name}
	if rest, ok := strings.CutPrefix(name, AutoSnapshotPrefix); ok {
		if t, err := time.Parse(autoTimeLayout, rest); err == nil {
			sn.Created, sn.Auto = t, true
		}
	}
	return sn
}

// PruneAuto returns the automatic snapshots to delete so that keep remain:
// the oldest ones. Manual snapshots are never pruned.
func PruneAuto(snaps []Snapshot, keep int) []string {
	var auto []string
	for _, sn := range snaps {
		if sn.Auto {
			auto = append(auto, sn.Name)
		}
	}
	sort.Strings(auto) // the timestamp sorts in time order
	if len(auto) <= keep {
		return nil
	}
	return auto[:len(auto)-keep]
}

// snapshotterFor picks the backend by the box's VM type.
func (s *Service) snapshotterFor(m boxmeta.Meta) snapshotter {
	if m.VMType == config.VMTypeVZ {
		return &cloneSnapshots{
			dir:     s.Layout.SnapshotsDir,
			instDir: func(box string) string { return filepath.Join(s.Layout.LimaHome(), box) },
			clone:   cloneFile,
		}
	}
	return &limaSnapshots{c: s.Lima}
}

// stoppedBox reads the box's metadata and refuses unless its instance is
// stopped. The caller holds the box lock.
func (s *Service) stoppedBox(box, verb string) (boxmeta.Meta, error) {
	m, err := boxmeta.Read(s.Layout, box)
	if err != nil {
		return boxmeta.Meta{}, err
	}
	st, err := lima.ReadInstanceDir(s.Layout.LimaHome(), box)
	if err != nil {
		return m, fmt.Errorf("%s box %s: %w", verb, box, err)
	}
	if st.Status != lima.StatusStopped {
		return m, hint.New(fmt.Errorf("%s box %s: %w (%s)", verb, box, ErrBoxRunning, strings.ToLower(string(st.Status))), fmt.Sprintf("corral stop %s first: snapshots are taken and restored only on a stopped box, so the project mount is never stale", box))
	}
	return m, nil
}

// Snapshots lists a box's snapshots, oldest automatic ones first, then the
// manual ones by name.
func (s *Service) Snapshots(ctx context.Context, box string) ([]Snapshot, error) {
	m, err := boxmeta.Read(s.Layout, box)
	if err != nil {
		return nil, err
	}
	snaps, err := s.snapshotterFor(m).list(ctx, box)
	if err != nil {
		return nil, fmt.Errorf("listing snapshots of box %s: %w", box, err)
	}
	sort.SliceStable(snaps, func(i, j int) bool {
		if snaps[i].Auto != snaps[j].Auto {
			return snaps[i].Auto
		}
		return snaps[i].Name < snaps[j].Name
	})
	return snaps, nil
}

// CreateSnapshot takes a snapshot of a stopped box. An empty name takes an
// automatic-style name (auto-<UTC time>), which is then pruned like one.
func (s *Service) CreateSnapshot(ctx context.Context, box, name string) (string, error) {
	auto := name == ""
	if auto {
		name = AutoSnapshotName(s.now())
	} else if err := CheckSnapshotName(name); err != nil {
		return "", err
	}
	lock, err := s.LockBox(ctx, box)
	if err != nil {
		return "", err
	}
	defer lock.Unlock()
	m, err := s.stoppedBox(box, "snapshotting")
	if err != nil {
		return "", err
	}
	if err := s.takeSnapshot(ctx, m, name, auto); err != nil {
		return "", err
	}
	return name, nil
}

func (s *Service) takeSnapshot(ctx context.Context, m boxmeta.Meta, name string, auto bool) error {
	sn := s.snapshotterFor(m)
	existing, err := sn.list(ctx, m.Name)
	if err != nil {
		return fmt.Errorf("snapshotting box %s: %w", m.Name, err)
	}
	for _, e := range existing {
		if e.Name == name {
			return hint.New(fmt.Errorf("snapshotting box %s: a snapshot named %s exists", m.Name, name), fmt.Sprintf("corral snapshot rm %s %s, or pick another name", m.Name, name))
		}
	}
	if err := sn.create(ctx, m.Name, name); err != nil {
		return fmt.Errorf("snapshotting box %s as %s: %w", m.Name, name, err)
	}
	s.audit(audit.Event{Kind: audit.KindSnapshot, Box: m.Name, Fields: map[string]any{"name": name, "auto": auto}})
	return nil
}

// RestoreSnapshot rolls a stopped box's disk back to a snapshot. Everything
// written to the box's disk since the snapshot is lost; the project
// directory (a host mount) is not touched. The box is refused while it
// runs (see the note on stale project mounts at the top of this file).
//
// confirm, when not nil, is asked under the box lock once the box is known
// to be stopped and the snapshot to exist; an error from it cancels.
func (s *Service) RestoreSnapshot(ctx context.Context, box, name string, confirm func(Snapshot) error) error {
	lock, err := s.LockBox(ctx, box)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	m, err := s.stoppedBox(box, "restoring")
	if err != nil {
		return err
	}
	if m.Saved != nil {
		// Resuming would load the saved state, disk included, over the
		// restored disk.
		return hint.New(fmt.Errorf("restoring box %s: its VM state is saved", box), fmt.Sprintf("corral stop %s discards the saved state; then restore", box))
	}
	sn := s.snapshotterFor(m)
	snap, err := s.findSnapshot(ctx, sn, box, name)
	if err != nil {
		return err
	}
	if confirm != nil {
		if err := confirm(snap); err != nil {
			return err
		}
	}
	if err := sn.apply(ctx, box, name); err != nil {
		return fmt.Errorf("restoring box %s to snapshot %s: %w", box, name, err)
	}
	s.audit(audit.Event{Kind: audit.KindRestore, Box: box, Fields: map[string]any{"name": name}})
	return nil
}

// RemoveSnapshot deletes a snapshot of a stopped box.
func (s *Service) RemoveSnapshot(ctx context.Context, box, name string) error {
	lock, err := s.LockBox(ctx, box)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	m, err := s.stoppedBox(box, "removing a snapshot of")
	if err != nil {
		return err
	}
	sn := s.snapshotterFor(m)
	if _, err := s.findSnapshot(ctx, sn, box, name); err != nil {
		return err
	}
	if err := sn.remove(ctx, box, name); err != nil {
		return fmt.Errorf("removing snapshot %s of box %s: %w", name, box, err)
	}
	s.audit(audit.Event{Kind: audit.KindSnapshot, Box: box, Fields: map[string]any{"name": name, "removed": true}})
	return nil
}

func (s *Service) findSnapshot(ctx context.Context, sn snapshotter, box, name string) (Snapshot, error) {
	snaps, err := sn.list(ctx, box)
	if err != nil {
		return Snapshot{}, fmt.Errorf("listing snapshots of box %s: %w", box, err)
	}
	for _, x := range snaps {
		if x.Name == name {
			return x, nil
		}
	}
	return Snapshot{}, hint.New(fmt.Errorf("%w %q of box %s", ErrNoSnapshot, name, box), fmt.Sprintf("corral snapshot ls %s", box))
}

// autoSnapshot takes an automatic snapshot of a stopped box about to start
// when its config says snapshots = "auto", keeping the newest
// snapshots_keep of them. Up calls it with the box lock held. A failure
// only warns: a box that cannot be snapshotted must still start.
func (s *Service) autoSnapshot(ctx context.Context, r boxmeta.Resolved, m boxmeta.Meta) {
	c := r.Loaded.Settings()
	if c.Snapshots != config.SnapshotsAuto {
		return
	}
	keep := c.SnapshotsKeep
	if st, err := lima.ReadInstanceDir(s.Layout.LimaHome(), m.Name); err != nil || st.Status != lima.StatusStopped {
		return
	}
	name := AutoSnapshotName(s.now())
	s.progress("taking snapshot %s of box %s", name, m.Name)
	if err := s.takeSnapshot(ctx, m, name, true); err != nil {
		s.progress("warning: automatic snapshot failed: %v", err)
		return
	}
	sn := s.snapshotterFor(m)
	snaps, err := sn.list(ctx, m.Name)
	if err != nil {
		s.progress("warning: pruning automatic snapshots: %v", err)
		return
	}
	for _, old := range PruneAuto(snaps, keep) {
		if err := sn.remove(ctx, m.Name, old); err != nil {
			s.progress("warning: removing automatic snapshot %s: %v", old, err)
			continue
		}
		s.audit(audit.Event{Kind: audit.KindSnapshot, Box: m.Name, Fields: map[string]any{"name": old, "removed": true, "auto": true}})
	}
}

// limaSnapshots are Lima's own (qemu driver).
type limaSnapshots struct{ c *lima.Client }

var _ snapshotter = (*limaSnapshots)(nil)

func (l *limaSnapshots) list(ctx context.Context, box string) ([]Snapshot, error) {
	tags, err := l.c.SnapshotList(ctx, box)
	if err != nil {
		return nil, err
	}
	out := make([]Snapshot, 0, len(tags))
	for _, t := range tags {
		if t == SuspendTag {
			continue // a saved box's state (suspend.go), not a user's snapshot
		}
		out = append(out, snapshotOf(t))
	}
	return out, nil
}

func (l *limaSnapshots) create(ctx context.Context, box, name string) error {
	return l.c.SnapshotCreate(ctx, box, name)
}

func (l *limaSnapshots) apply(ctx context.Context, box, name string) error {
	return l.c.SnapshotApply(ctx, box, name)
}

func (l *limaSnapshots) remove(ctx context.Context, box, name string) error {
	return l.c.SnapshotDelete(ctx, box, name)
}

// cloneSnapshots copy the instance's disk files with a copy-on-write clone
// into dir(box)/<name>/ (vz, where Lima has no snapshots).
type cloneSnapshots struct {
	dir     func(box string) string
	instDir func(box string) string
	// clone makes dst a copy-on-write copy of src; dst must not exist.
	clone func(src, dst string) error
}

var _ snapshotter = (*cloneSnapshots)(nil)

// A clone snapshot holds the disk the guest writes and, when present,
// vz's EFI variable store, which belongs with the disk it boots. The disk
// is "disk" since Lima 2.1 and "diffdisk" before; an instance migrated by
// Lima 2.1+ keeps "diffdisk" with "disk" a symbolic link to it
// (pkg/limatype/filenames DiffDiskLegacy), so the regular file is the one
// cloned (clonefile with CLONE_NOFOLLOW would copy the link).
var (
	diskFiles = []string{"diffdisk", "disk"}
	efiFile   = "vz-efi"
)

// snapshotFiles returns the files of dir to snapshot or restore: its disk,
// the first of diskFiles that is a regular file (required), and the EFI
// store when it is there.
func snapshotFiles(dir string) ([]string, error) {
	for _, f := range diskFiles {
		if fi, err := os.Lstat(filepath.Join(dir, f)); err == nil && fi.Mode().IsRegular() {
			files := []string{f}
			if _, err := os.Lstat(filepath.Join(dir, efiFile)); err == nil {
				files = append(files, efiFile)
			}
			return files, nil
		}
	}
	return nil, fmt.Errorf("no disk (%s) in %s", strings.Join(diskFiles, " or "), dir)
}

func (c *cloneSnapshots) list(_ context.Context, box string) ([]Snapshot, error) {
	ents, err := os.ReadDir(c.dir(box))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Snapshot
	for _, e := range ents {
		if !e.IsDir() || !snapNameRe().MatchString(e.Name()) {
			continue // ".tmp-*" of an interrupted create
		}
		sn := snapshotOf(e.Name())
		if !sn.Auto {
			if fi, err := e.Info(); err == nil {
				sn.Created = fi.ModTime().UTC()
			}
		}
		out = append(out, sn)
	}
	return out, nil
}

// create clones into a temporary directory renamed into place, so an
// interrupted create never looks like a snapshot.
func (c *cloneSnapshots) create(_ context.Context, box, name string) error {
	if err := os.MkdirAll(c.dir(box), atomicfile.DirMode); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(c.dir(box), ".tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	files, err := snapshotFiles(c.instDir(box))
	if err != nil {
		return err
	}
	for _, f := range files {
		src := filepath.Join(c.instDir(box), f)
		if err := c.clone(src, filepath.Join(tmp, f)); err != nil {
			return fmt.Errorf("cloning %s: %w", src, err)
		}
	}
	return os.Rename(tmp, filepath.Join(c.dir(box), name))
}

// apply clones each snapshot file next to the instance's and renames it
// over the original, so an interrupted restore leaves either disk whole.
func (c *cloneSnapshots) apply(_ context.Context, box, name string) error {
	snap := filepath.Join(c.dir(box), name)
	files, err := snapshotFiles(snap)
	if err != nil {
		return err
	}
	for _, f := range files {
		src := filepath.Join(snap, f)
		dst := filepath.Join(c.instDir(box), f)
		tmp := dst + ".corral-restore"
		_ = os.Remove(tmp)
		if err := c.clone(src, tmp); err != nil {
			return fmt.Errorf("cloning %s: %w", src, err)
		}
		if err := os.Rename(tmp, dst); err != nil {
			_ = os.Remove(tmp)
			return err
		}
	}
	return nil
}

func (c *cloneSnapshots) remove(_ context.Context, box, name string) error {
	return os.RemoveAll(filepath.Join(c.dir(box), name))
}
