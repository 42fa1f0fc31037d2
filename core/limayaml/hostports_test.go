package limayaml

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestSetHostPorts(t *testing.T) {
	in := []byte("vmType: qemu\nparam:\n  NETWORK: broker\n  PROXY_PORT: \"42000\"\nportForwards: []\n")
	param := func(b []byte) map[string]string {
		var v struct {
			Param map[string]string `yaml:"param"`
		}
		if err := yaml.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		return v.Param
	}
	out, err := SetHostPorts(in, []int{9229, 63342})
	if err != nil {
		t.Fatal(err)
	}
	if p := param(out); p[HostPortsKey] != "9229 63342" || p["NETWORK"] != "broker" || p["PROXY_PORT"] != "42000" {
		t.Errorf("param = %v", p)
	}
	again, err := SetHostPorts(out, []int{8080})
	if err != nil || param(again)[HostPortsKey] != "8080" || strings.Count(string(again), HostPortsKey) != 1 {
		t.Errorf("replaced: %s %v", again, err)
	}
	none, err := SetHostPorts(again, nil)
	if err != nil || strings.Contains(string(none), HostPortsKey) || param(none)["NETWORK"] != "broker" {
		t.Errorf("removed: %s %v", none, err)
	}
	if same, err := SetHostPorts(in, nil); err != nil || string(same) != string(in) {
		t.Errorf("no ports changed the template: %s %v", same, err)
	}
}
