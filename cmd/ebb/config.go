package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"
)

// configFlag is the flag naming a YAML file of `ebb serve` settings.
const configFlag = "config"

// configPathFlags are the flags holding file or directory paths. In a
// config file a relative path is taken relative to the file's directory,
// as Prometheus does, so that a config file and the files it names can
// move together.
var configPathFlags = map[string]bool{"data": true, "auth-file": true, "cql-ca-file": true}

// ConfigError is a config file that cannot be used: unreadable, not YAML,
// or holding a key or value that `ebb serve` does not take.
type ConfigError struct {
	File string
	// Line is the line of the offending key, or 0 when the file as a whole
	// is at fault.
	Line int
	// Key is the offending key, or "".
	Key string
	Err error
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "config file %s", e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ", line %d", e.Line)
	}
	switch {
	case errors.Is(e.Err, errUnknownKey):
		fmt.Fprintf(&b, ": unknown key %q (keys are the names of ebb serve's flags without the dashes, such as addr or backend)", e.Key)
	case e.Key != "":
		fmt.Fprintf(&b, ": %s: %v", e.Key, e.Err)
	default:
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}

func (e *ConfigError) Unwrap() error { return e.Err }

// errUnknownKey is a config key that names no flag of `ebb serve`.
var errUnknownKey = errors.New("unknown key")

// applyConfigFile sets every flag that the YAML file at path names and the
// command line did not set: flags given on the command line win. The file
// is a mapping from flag names (without "--") to values; a list is
// accepted for list flags such as cql-hosts. Unknown keys, repeated keys
// and values that the flag refuses are errors naming the key.
func applyConfigFile(flags *pflag.FlagSet, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return &ConfigError{File: path, Err: err}
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
		return nil // an empty file sets nothing
	} else if err != nil {
		return &ConfigError{File: path, Err: err}
	}
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		return &ConfigError{File: path, Err: errors.New("want one YAML document, found more")}
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return nil // a file of comments only
	}
	if root.Kind != yaml.MappingNode {
		return &ConfigError{File: path, Line: root.Line, Err: errors.New("want a mapping of flag names to values, such as `addr: 127.0.0.1:7070`")}
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return &ConfigError{File: path, Line: k.Line, Err: errors.New("a key must be a flag name")}
		}
		key := k.Value
		fail := func(err error) error { return &ConfigError{File: path, Line: k.Line, Key: key, Err: err} }
		if seen[key] {
			return fail(errors.New("given twice"))
		}
		seen[key] = true
		f := flags.Lookup(key)
		if f == nil || key == configFlag || key == "help" {
			return fail(errUnknownKey)
		}
		var vals []string // for a list flag
		val := ""
		switch v.Kind {
		case yaml.ScalarNode:
			if v.Tag == "!!null" {
				return fail(errors.New("no value"))
			}
			val = v.Value
			if configPathFlags[key] && val != "" && !filepath.IsAbs(val) {
				val = filepath.Join(filepath.Dir(path), val)
			}
		case yaml.SequenceNode:
			if _, ok := f.Value.(pflag.SliceValue); !ok {
				return fail(errors.New("want a single value, not a list"))
			}
			vals = make([]string, len(v.Content))
			for j, item := range v.Content {
				if item.Kind != yaml.ScalarNode {
					return fail(errors.New("want a list of single values"))
				}
				vals[j] = item.Value
			}
		default:
			return fail(errors.New("want a single value or a list"))
		}
		if f.Changed {
			continue // the command line overrides the file
		}
		if vals != nil {
			err = f.Value.(pflag.SliceValue).Replace(vals)
		} else {
			err = f.Value.Set(val)
		}
		if err != nil {
			return fail(err)
		}
		// Remembered so that a later check can point at the line.
		if err := flags.SetAnnotation(key, configLineAnnotation, []string{strconv.Itoa(k.Line)}); err != nil {
			return fail(err)
		}
	}
	return nil
}
