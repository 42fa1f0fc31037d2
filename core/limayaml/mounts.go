package limayaml

import (
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/corral-dev/corral/core/untrusted"
)

// maxInstanceYAML caps how much of an instance's lima.yaml corral reads:
// corral renders it (tens of KiB at most); anything larger is not
// corral's.
const maxInstanceYAML = 1 << 20

// ReadInstance reads a Lima instance's lima.yaml at path (one corral
// rendered) as a regular file of at most 1 MiB, without blocking
// (core/untrusted): a FIFO or a device in its place is an error naming
// it, not a hang. A missing file returns an error wrapping fs.ErrNotExist.
func ReadInstance(path string) ([]byte, error) {
	b, err := untrusted.ReadFile(path, maxInstanceYAML)
	if err != nil {
		return nil, fmt.Errorf("reading the instance config: %w", err)
	}
	return b, nil
}

// ReadMounts returns the mounts of a Lima instance's lima.yaml at path:
// what the box actually has, whatever its config says now. Only the
// mounts key is decoded; the rest of Lima's schema is ignored.
func ReadMounts(path string) ([]Mount, error) {
	b, err := ReadInstance(path)
	if err != nil {
		return nil, fmt.Errorf("reading the box's mounts: %w", err)
	}
	var t struct {
		Mounts []Mount `yaml:"mounts"`
	}
	if err := yaml.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("reading the box's mounts from %s: %w", path, err)
	}
	return t.Mounts, nil
}
