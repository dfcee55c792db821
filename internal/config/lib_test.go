package config

import (
	"bytes"

	"github.com/pelletier/go-toml/v2"
	"go.yaml.in/yaml/v3"
)

// libDecode decodes with the libraries' own strict decoders
// (DisallowUnknownFields, KnownFields): the differential oracle for the
// positioned decoder.
func libDecode(format string, data []byte) (*Config, error) {
	var c Config
	if format == "toml" {
		return &c, toml.NewDecoder(bytes.NewReader(data)).DisallowUnknownFields().EnableUnmarshalerInterface().Decode(&c)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	err := dec.Decode(&c)
	if err != nil && err.Error() == "EOF" {
		err = nil
	}
	return &c, err
}
