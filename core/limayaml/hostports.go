package limayaml

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// HostPortsKey is the template parameter that carries host_ports to the
// guest (guest/provision/40-network.sh writes it to network.env, and
// apply-network opens those ports at the broker's address). Like the port
// forwards it is outside the template hash: corral sets it before every
// start (SetHostPorts), so a change is no drift.
const HostPortsKey = "HOST_PORTS"

// HostPortsParam is the parameter's value: the ports, space-separated.
func HostPortsParam(ports []int) string {
	s := make([]string, len(ports))
	for i, p := range ports {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, " ")
}

// SetHostPorts sets param.HOST_PORTS of a Lima instance YAML to ports
// (removes it for none) and leaves every other node as it was.
func SetHostPorts(limaYAML []byte, ports []int) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(limaYAML, &doc); err != nil {
		return nil, fmt.Errorf("reading the instance template: %w", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("reading the instance template: not a YAML mapping")
	}
	value := HostPortsParam(ports)
	m := doc.Content[0]
	var param *yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "param" && m.Content[i+1].Kind == yaml.MappingNode {
			param = m.Content[i+1]
		}
	}
	if param == nil {
		if value == "" {
			return limaYAML, nil
		}
		param = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "param"}, param)
	}
	found := false
	for i := 0; i+1 < len(param.Content); i += 2 {
		if param.Content[i].Value != HostPortsKey {
			continue
		}
		found = true
		if value == "" {
			param.Content = append(param.Content[:i], param.Content[i+2:]...)
			break
		}
		param.Content[i+1] = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: value}
	}
	if !found && value == "" {
		return limaYAML, nil
	}
	if !found {
		param.Content = append(param.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: HostPortsKey},
			&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: value})
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, fmt.Errorf("writing the instance template: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("writing the instance template: %w", err)
	}
	var back struct {
		Param map[string]string `yaml:"param"`
	}
	if err := yaml.Unmarshal(b.Bytes(), &back); err != nil || back.Param[HostPortsKey] != value {
		return nil, fmt.Errorf("writing the instance template: the host ports did not survive a round trip")
	}
	return b.Bytes(), nil
}
