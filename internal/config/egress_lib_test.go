package config

import (
	"fmt"

	"github.com/pelletier/go-toml/v2"
	"go.yaml.in/yaml/v3"
)

// The libraries' own decoders (the differential oracle of the fuzz tests)
// learn network = true | false here, as warden's decoder reads it.

func (m *NetworkMode) UnmarshalTOML(data []byte) error {
	var v struct{ V any }
	if err := toml.Unmarshal(append([]byte("V = "), data...), &v); err != nil {
		return err
	}
	return m.set(v.V)
}

func (m *NetworkMode) UnmarshalYAML(n *yaml.Node) error {
	var v any
	if err := n.Decode(&v); err != nil {
		return err
	}
	return m.set(v)
}

func (m *NetworkMode) set(v any) error {
	switch v := v.(type) {
	case bool:
		*m = NetworkMode(networkFromBool(v))
	case string:
		*m = NetworkMode(v)
	default:
		return fmt.Errorf("network: %T", v)
	}
	return nil
}
