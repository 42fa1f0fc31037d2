package box

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/untrusted"
	"os"
	"path/filepath"

	"github.com/corral-dev/corral/core/atomicfile"
	"github.com/corral-dev/corral/core/limayaml"
	"github.com/corral-dev/corral/core/version"
)

// The drift check of a session on a running box compares the template the
// config renders now with the one the box was created from. Rendering
// costs milliseconds (the YAML, every guest script, a sha256) and its
// inputs rarely change between sessions, so its hash is cached in
// run/cache/<box>.template, keyed by everything the render reads: its
// limayaml.Input (the effective config, i.e. the config files' merged
// content already loaded for the session; box, project, platform, broker
// address, guest user) and the identity of the corral binary (path, size,
// mtime, version: the guest scripts are embedded in it). A key that differs renders again and replaces the entry. The
// cache is host-private (0700 run directory); a box cannot write it.

// maxTemplateCache caps the cache entry read (a key and a hash).
const maxTemplateCache = 64 << 10

type templateCache struct {
	Key  string `json:"key"`
	Hash string `json:"hash"`
}

// templateKey is the cache key of a render.
func (s *Service) templateKey(r boxmeta.Resolved, brokerPort int) (string, error) {
	exe := ""
	if st, err := os.Stat(s.Exe); err == nil {
		exe = fmt.Sprintf("%s|%d|%d|%s", s.Exe, st.Size(), st.ModTime().UnixNano(), version.Version)
	}
	in, err := renderInput(s.Layout, r, brokerPort, false)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(struct {
		Exe   string
		Input limayaml.Input
	}{exe, in})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// templateHash is Render(...).Hash for a running box, from the cache when
// its key still matches.
func (s *Service) templateHash(r boxmeta.Resolved, brokerPort int) (string, error) {
	key, kerr := s.templateKey(r, brokerPort)
	path := filepath.Join(s.Layout.CacheDir(), r.Project.Box+".template")
	if kerr == nil {
		var c templateCache
		if b, err := untrusted.ReadJSON(path, untrusted.State(maxTemplateCache)); err == nil && json.Unmarshal(b, &c) == nil && c.Key == key && c.Hash != "" {
			return c.Hash, nil
		}
	}
	rendered, err := Render(s.Layout, r, brokerPort, false)
	if err != nil {
		return "", err
	}
	if kerr == nil {
		if b, err := json.Marshal(templateCache{Key: key, Hash: rendered.Hash}); err == nil {
			if err := os.MkdirAll(s.Layout.CacheDir(), atomicfile.DirMode); err == nil {
				// A cache: no fsync; a torn or lost entry renders again.
				_ = os.WriteFile(path+".tmp", b, 0o600)
				_ = os.Rename(path+".tmp", path)
			}
		}
	}
	return rendered.Hash, nil
}
