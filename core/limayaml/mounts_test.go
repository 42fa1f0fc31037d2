package limayaml

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestReadMounts(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "lima.yaml")
	rendered, err := marshal(Template{VMType: "qemu", Mounts: []Mount{
		{Location: "/home/u/src/web", MountPoint: "/home/u/src/web", Writable: true},
		{Location: "/home/u/.corral/seed/web", MountPoint: "/corral/seed"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	// Lima adds keys of its own when it copies the template in.
	if err := os.WriteFile(p, append(rendered, []byte("\nlimaVersion: 2.2.0\nplain: false\n")...), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := ReadMounts(p)
	if err != nil {
		t.Fatal(err)
	}
	want := []Mount{
		{Location: "/home/u/src/web", MountPoint: "/home/u/src/web", Writable: true},
		{Location: "/home/u/.corral/seed/web", MountPoint: "/corral/seed"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("mounts = %+v, want %+v", got, want)
	}

	for name, content := range map[string]string{
		"not yaml": "mounts: [\n",
		"too big":  strings.Repeat("#", maxInstanceYAML+1),
	} {
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadMounts(p); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: err = %v, want one naming %s", name, err, p)
		}
	}
	if _, err := ReadMounts(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Error("a missing file read without error")
	}
}
