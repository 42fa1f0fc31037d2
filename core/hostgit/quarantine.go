package hostgit

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// quarantine is a temporary object directory inside the host repository's
// objects directory, the way git's receive-pack takes a push: the box's
// pack is indexed into it, the host's objects serve as an alternate (so a
// thin pack's bases and the prerequisites resolve), and every check reads
// both. Only when the checks pass are its packs moved into the host's
// objects directory; until then no ref can point at what it holds, and
// removing it removes all of it. The "tmp_objdir-" prefix is git's own, so
// git prune removes one a crash left behind.
type quarantine struct {
	dir     string // objects/tmp_objdir-corral-*
	objects string // the host's objects directory
	repo    Repo   // the host repository seen through the quarantine
}

// objectsDir is the host repository's object directory (for a linked
// worktree, the common directory's).
func (r Repo) objectsDir(ctx context.Context) (string, error) {
	out, err := r.run(ctx, "rev-parse", "--git-path", "objects")
	if err != nil {
		return "", fmt.Errorf("finding the object directory of %s: %w", r.WorkTree, err)
	}
	dir := strings.TrimSuffix(string(out), "\n")
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(r.GitDir, dir)
	}
	if st, err := os.Stat(filepath.Join(dir, "pack")); err != nil || !st.IsDir() {
		return "", fmt.Errorf("the object directory of %s has no pack directory: %s", r.WorkTree, dir)
	}
	return filepath.Clean(dir), nil
}

// newQuarantine makes an empty quarantine. Every git process through it
// gets GIT_ALLOC_LIMIT, and GIT_QUARANTINE_PATH, with which git refuses
// to update any ref.
func (r Repo) newQuarantine(ctx context.Context, lim Limits) (*quarantine, error) {
	objects, err := r.objectsDir(ctx)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(objects, "tmp_objdir-corral-")
	if err != nil {
		return nil, fmt.Errorf("creating a quarantine for the box's objects: %w", err)
	}
	if err := os.Mkdir(filepath.Join(dir, "pack"), 0o755); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	q := &quarantine{dir: dir, objects: objects, repo: r}
	q.repo.env = []string{
		"GIT_OBJECT_DIRECTORY=" + dir,
		"GIT_ALTERNATE_OBJECT_DIRECTORIES=" + quoteAlternate(objects),
		"GIT_QUARANTINE_PATH=" + dir,
		"GIT_ALLOC_LIMIT=" + strconv.FormatInt(lim.allocLimit(), 10),
	}
	return q, nil
}

// quoteAlternate quotes a path for GIT_ALTERNATE_OBJECT_DIRECTORIES, a
// colon-separated list whose entries may be C-quoted.
func quoteAlternate(p string) string {
	if !strings.ContainsAny(p, ":\"\\\n") {
		return p
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(p) + `"`
}

func (q *quarantine) remove() { _ = os.RemoveAll(q.dir) }

// relaxedFsck are git fsck's checks of .git and .gitmodules entries, made
// warnings when the pull refuses every change to those anyway (inspect),
// so that the refusal names branches and paths rather than an object.
// With --allow-submodules they stay errors: a .git entry or a symlinked or
// malformed .gitmodules is never taken.
const relaxedFsck = "hasdotgit=warn,gitmodulesblob=warn,gitmodulesname=warn,gitmodulesparse=warn," +
	"gitmodulespath=warn,gitmodulessymlink=warn,gitmodulesupdate=warn,gitmodulesurl=warn"

// indexPack runs git index-pack on the pack after b's header, into the
// quarantine, bounded: --max-input-size (the pack's size), GIT_ALLOC_LIMIT
// (one object), the child's address space (limitChild, set before the
// first byte of input), the context's deadline, and --strict (every
// object fsck-checked, every link present; relaxedFsck if relax).
func (q *quarantine) indexPack(ctx context.Context, b Bundle, lim Limits, relax bool) error {
	strict := "--strict"
	if relax {
		strict += "=" + relaxedFsck
	}
	f, err := os.Open(b.Path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Seek(b.HeaderLen, io.SeekStart); err != nil {
		return err
	}
	cmd := q.repo.command(ctx, "index-pack", "--stdin", "--fix-thin", strict,
		"--max-input-size="+strconv.FormatInt(max(b.Size-b.HeaderLen, 1), 10))
	stderr := &capBuffer{max: 64 << 10}
	cmd.Stdout = &capBuffer{max: 4 << 10}
	cmd.Stderr = stderr
	cmd.WaitDelay = 5 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("running git index-pack: %w", err)
	}
	if err := limitChild(cmd.Process.Pid, lim.MaxMemory); err != nil {
		_ = cmd.Process.Kill()
		_ = stdin.Close()
		_ = cmd.Wait()
		return err
	}
	// A git that died (a limit) stops reading: the copy then fails, and
	// Wait says why.
	_, _ = io.Copy(stdin, f)
	_ = stdin.Close()
	if err := cmd.Wait(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: %w", ErrPack, gitError("index-pack", err, stderr.String()))
	}
	return nil
}

var packFileRE = regexp.MustCompile(`^pack-[0-9a-f]{40,64}\.(pack|rev|idx)$`)

// migrate moves the quarantine's packs into the host's objects directory,
// each index last: git finds a pack by its index, so none is seen half
// moved. A pack already there (the same name is the same content) stays.
func (q *quarantine) migrate() error {
	ents, err := os.ReadDir(filepath.Join(q.dir, "pack"))
	if err != nil {
		return err
	}
	var names []string
	for _, e := range ents {
		if e.Type().IsRegular() && packFileRE.MatchString(e.Name()) {
			names = append(names, e.Name())
		}
	}
	sort.SliceStable(names, func(i, j int) bool {
		return !strings.HasSuffix(names[i], ".idx") && strings.HasSuffix(names[j], ".idx")
	})
	for _, n := range names {
		dst := filepath.Join(q.objects, "pack", n)
		if _, err := os.Lstat(dst); err == nil {
			continue
		}
		if err := os.Rename(filepath.Join(q.dir, "pack", n), dst); err != nil {
			return fmt.Errorf("moving the box's objects into %s: %w", q.objects, err)
		}
	}
	return nil
}
