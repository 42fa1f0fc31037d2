package launchenv

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/corral-dev/corral/core/untrusted"
)

// CachedGitConfig answers user.name and user.email as HostGitConfig(dir)
// does, but runs git only when the answer may have changed: once per
// change of a git config file instead of two processes per session.
//
// The answer is cached in cacheDir (host-private) under a key made of the
// identity (device, inode, size, mtime, ctime; or absence) of every file
// git could have read it from, and of the environment git reads its config
// location from:
//
//   - the standard files: system (/etc/gitconfig, $GIT_CONFIG_SYSTEM),
//     global (~/.gitconfig, $XDG_CONFIG_HOME/git/config or
//     ~/.config/git/config, $GIT_CONFIG_GLOBAL), and the project's
//     .git, .git/config and .git/config.worktree (created later, they
//     change the key by appearing);
//   - every file `git config --list --show-origin` named when the cache
//     was filled, which covers [include] and [includeIf] files;
//   - the git binary on PATH, and the environment variables HOME,
//     XDG_CONFIG_HOME, GIT_DIR, GIT_COMMON_DIR and GIT_CONFIG*.
//
// A repository above dir whose config would apply is only covered through
// the origin list (it is named there once it sets anything). Keys other
// than user.name and user.email go to HostGitConfig.
func CachedGitConfig(dir, cacheDir string) GitConfigFunc {
	return cachedGitConfig(runHost, dir, cacheDir)
}

// gitIdentity is a cache entry.
type gitIdentity struct {
	Key   string   `json:"key"`
	Files []string `json:"files"` // origins named by git at fill time
	Name  string   `json:"name"`
	Email string   `json:"email"`
}

func cachedGitConfig(run RunFunc, dir, cacheDir string) GitConfigFunc {
	var (
		loaded bool
		id     gitIdentity
		lerr   error
	)
	plain := gitConfig(run, dir)
	return func(ctx context.Context, key string) (string, error) {
		if key != "user.name" && key != "user.email" {
			return plain(ctx, key)
		}
		if !loaded {
			id, lerr = loadGitIdentity(ctx, run, dir, cacheDir)
			loaded = true
		}
		if lerr != nil {
			return "", lerr
		}
		if key == "user.name" {
			return id.Name, nil
		}
		return id.Email, nil
	}
}

func gitCachePath(dir, cacheDir string) string {
	sum := sha256.Sum256([]byte(dir))
	return filepath.Join(cacheDir, "git-"+hex.EncodeToString(sum[:8])+".json")
}

// maxGitCache caps the cache entry read (a key, file stats and an identity).
const maxGitCache = 1 << 20

func loadGitIdentity(ctx context.Context, run RunFunc, dir, cacheDir string) (gitIdentity, error) {
	path := gitCachePath(dir, cacheDir)
	var c gitIdentity
	if b, err := untrusted.ReadJSON(path, untrusted.State(maxGitCache)); err == nil && json.Unmarshal(b, &c) == nil && c.Key != "" {
		if key, _ := gitKey(dir, c.Files); key == c.Key {
			return c, nil
		}
	}
	start := time.Now()
	origins, name, email, err := gitList(ctx, run, dir)
	if err != nil {
		return gitIdentity{}, err
	}
	key, newest := gitKey(dir, origins)
	c = gitIdentity{Key: key, Files: origins, Name: name, Email: email}
	// A file changed around the time git read it may hold something else
	// than git saw under the identity just taken: answer, but do not
	// cache (the next session fills again).
	if newest.After(start.Add(-2 * time.Second)) {
		return c, nil
	}
	if b, err := json.Marshal(c); err == nil && os.MkdirAll(cacheDir, 0o700) == nil {
		// A cache: no fsync; a torn or lost entry is filled again.
		tmp := path + ".tmp"
		if os.WriteFile(tmp, b, 0o600) == nil {
			_ = os.Rename(tmp, path)
		}
	}
	return c, nil
}

// gitList runs `git config --list --show-origin -z` once, in dir (retried
// outside dir like HostGitConfig), and returns the files it read and the
// last user.name and user.email (what `git config --get` would print).
func gitList(ctx context.Context, run RunFunc, dir string) (origins []string, name, email string, err error) {
	args := []string{"config", "--list", "--show-origin", "-z"}
	out, err := run(ctx, dir, "git", args...)
	if err != nil && dir != "" && !unsetKey(err) && !errors.Is(err, exec.ErrNotFound) {
		out, err = run(ctx, "", "git", args...)
	}
	switch {
	case errors.Is(err, exec.ErrNotFound), unsetKey(err):
		return nil, "", "", nil
	case err != nil:
		return nil, "", "", err
	}
	seen := map[string]bool{}
	// Records are ORIGIN NUL KEY LF VALUE NUL (a key without a value has
	// no LF).
	parts := bytes.Split(out, []byte{0})
	for i := 0; i+1 < len(parts); i += 2 {
		origin, kv := string(parts[i]), string(parts[i+1])
		if f, ok := strings.CutPrefix(origin, "file:"); ok {
			if !filepath.IsAbs(f) {
				f = filepath.Join(dir, f)
			}
			if !seen[f] {
				seen[f] = true
				origins = append(origins, f)
			}
		}
		k, v, _ := strings.Cut(kv, "\n")
		switch strings.ToLower(k) {
		case "user.name":
			name = v
		case "user.email":
			email = v
		}
	}
	sort.Strings(origins)
	return origins, name, email, nil
}

// gitKey is the identity of everything git config's answer depends on,
// and the newest modification time among the files.
func gitKey(dir string, origins []string) (string, time.Time) {
	home := os.Getenv("HOME")
	xdg := os.Getenv("XDG_CONFIG_HOME")
	if xdg == "" && home != "" {
		xdg = filepath.Join(home, ".config")
	}
	files := []string{"/etc/gitconfig", os.Getenv("GIT_CONFIG_SYSTEM"), os.Getenv("GIT_CONFIG_GLOBAL")}
	if home != "" {
		files = append(files, filepath.Join(home, ".gitconfig"))
	}
	if xdg != "" {
		files = append(files, filepath.Join(xdg, "git", "config"))
	}
	if dir != "" {
		files = append(files, filepath.Join(dir, ".git"), filepath.Join(dir, ".git", "config"), filepath.Join(dir, ".git", "config.worktree"))
	}
	if git, err := exec.LookPath("git"); err == nil {
		files = append(files, git)
	}
	files = append(files, origins...)
	h := sha256.New()
	fmt.Fprintf(h, "dir=%q\n", dir)
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "HOME" || k == "XDG_CONFIG_HOME" || k == "GIT_DIR" || k == "GIT_COMMON_DIR" || strings.HasPrefix(k, "GIT_CONFIG") {
			env = append(env, kv)
		}
	}
	sort.Strings(env)
	for _, kv := range env {
		fmt.Fprintf(h, "env=%q\n", kv)
	}
	var newest time.Time
	for _, f := range files {
		if f == "" {
			continue
		}
		st, err := os.Stat(f)
		if err != nil {
			fmt.Fprintf(h, "file=%q absent\n", f)
			continue
		}
		var ino uint64
		if sys, ok := st.Sys().(*syscall.Stat_t); ok {
			ino = uint64(sys.Ino)
		}
		// An editor that replaces the file changes the inode; one that
		// writes in place changes size or mtime.
		fmt.Fprintf(h, "file=%q %d %d %d %v\n", f, ino, st.Size(), st.ModTime().UnixNano(), st.Mode())
		if st.ModTime().After(newest) {
			newest = st.ModTime()
		}
	}
	return hex.EncodeToString(h.Sum(nil)), newest
}
