package hostgit

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// BenchmarkPullHostSide is the host's share of one `corral pull` of a box
// branch with 100 new commits (one file changed per commit) on a
// 100-commit base: receive and check the bundle, git bundle verify, the
// hardened fetch, the count and the log. The box's ssh round trip and its
// git bundle create are not included.
func BenchmarkPullHostSide(b *testing.B) {
	host, box := benchRepos(b)
	bundle := filepath.Join(b.TempDir(), "b.bundle")
	r, err := Open(host)
	if err != nil {
		b.Fatal(err)
	}
	haves, err := r.Haves(context.Background(), "bench")
	if err != nil {
		b.Fatal(err)
	}
	benchGit(b, box, append([]string{"bundle", "create", "-q", bundle, "--branches", "--not"}, haves...)...)
	heads := boxHeads(b, box)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		in, err := os.Open(bundle)
		if err != nil {
			b.Fatal(err)
		}
		bd, err := ReceiveBundle(in, b.TempDir(), 1<<30)
		in.Close()
		if err != nil {
			b.Fatal(err)
		}
		res, err := r.Fetch(context.Background(), bd, heads, "bench-"+strconv.Itoa(i), FetchOptions{})
		if err != nil || res.NewCommits != 100 {
			b.Fatalf("%+v %v", res, err)
		}
	}
}

func benchRepos(b *testing.B) (host, box string) {
	b.Helper()
	root := b.TempDir()
	host, box = filepath.Join(root, "host"), filepath.Join(root, "box")
	if err := os.MkdirAll(host, 0o755); err != nil {
		b.Fatal(err)
	}
	benchGit(b, host, "init", "-q", "-b", "main")
	commits := func(dir string, n int, tag string) {
		for i := 0; i < n; i++ {
			if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte(tag+strconv.Itoa(i)+"\n"), 0o644); err != nil {
				b.Fatal(err)
			}
			benchGit(b, dir, "add", "f.txt")
			benchGit(b, dir, "commit", "-q", "-m", tag+" "+strconv.Itoa(i))
		}
	}
	commits(host, 100, "base")
	benchGit(b, root, "clone", "-q", host, box)
	commits(box, 100, "box")
	return host, box
}
