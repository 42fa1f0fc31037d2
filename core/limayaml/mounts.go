package limayaml

import (
	"fmt"
	"io"
	"os"

	"go.yaml.in/yaml/v3"
)

// maxInstanceYAML caps how much of an instance's lima.yaml ReadMounts
// reads: corral renders it (tens of KiB at most); anything larger is not
// corral's.
const maxInstanceYAML = 1 << 20

// ReadMounts returns the mounts of a Lima instance's lima.yaml at path:
// what the box actually has, whatever its config says now. Only the
// mounts key is decoded; the rest of Lima's schema is ignored.
func ReadMounts(path string) ([]Mount, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the box's mounts: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxInstanceYAML+1))
	if err != nil {
		return nil, fmt.Errorf("reading the box's mounts from %s: %w", path, err)
	}
	if len(b) > maxInstanceYAML {
		return nil, fmt.Errorf("reading the box's mounts: %s is larger than %d bytes", path, maxInstanceYAML)
	}
	var t struct {
		Mounts []Mount `yaml:"mounts"`
	}
	if err := yaml.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("reading the box's mounts from %s: %w", path, err)
	}
	return t.Mounts, nil
}
