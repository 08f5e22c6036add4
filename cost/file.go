package cost

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// FileError is a price or workload file that cannot be read as one: it is
// missing, empty, not JSON or YAML, or holds a key of the wrong shape.
// Field, when known, names the key as the file spells it, as a dotted path
// ("dynamodb.on_demand.write_per_million").
type FileError struct {
	Path  string
	Field string
	Msg   string
}

func (e *FileError) Error() string {
	if e.Field == "" {
		return e.Path + ": " + e.Msg
	}
	return e.Path + ": " + e.Field + ": " + e.Msg
}

// LoadWorkload reads a workload file, JSON or YAML by extension, whose keys
// are the flags of `ebb cost`. A key that is unknown or of the wrong shape
// gives a *FileError naming it; the figures are checked by Validate. The
// keys naming the command's other files (chart, prices) are read by
// LoadWorkloadFile and ignored here.
func LoadWorkload(path string) (Workload, error) {
	f, err := LoadWorkloadFile(path)
	return f.Workload, err
}

// WorkloadFile is a workload file as `ebb cost --workload` reads it: the
// workload, and the keys of the command's flags that are not part of a
// workload.
type WorkloadFile struct {
	Workload Workload
	// Chart and Prices are the chart and prices keys: paths as the file
	// gives them, or "".
	Chart, Prices string
	// ProviderKey is how the file spelled its providers, "provider" (as
	// the flag, a comma-separated string or a list) or "providers", so
	// that an error names the key the file has.
	ProviderKey string
}

// LoadWorkloadFile reads a workload file as LoadWorkload does, with the
// keys of every flag of `ebb cost` that a file can hold: provider as the
// flag takes it (providers, a list, is taken too), chart and prices.
func LoadWorkloadFile(path string) (WorkloadFile, error) {
	var out WorkloadFile
	tree, err := readTree(path)
	if err != nil {
		return out, err
	}
	m, ok := tree.(map[string]any)
	if !ok {
		return out, fill(path, "", tree, reflect.ValueOf(&out.Workload).Elem())
	}
	for _, key := range []string{"chart", "prices"} {
		v, ok := m[key]
		if !ok {
			continue
		}
		s, ok := v.(string)
		if !ok || s == "" {
			return out, &FileError{Path: path, Field: key, Msg: fmt.Sprintf("want a file name, not %s", show(v))}
		}
		if key == "chart" {
			out.Chart = s
		} else {
			out.Prices = s
		}
		delete(m, key)
	}
	out.ProviderKey = "providers"
	if v, ok := m["provider"]; ok {
		if _, both := m["providers"]; both {
			return out, &FileError{Path: path, Field: "provider", Msg: "give provider or providers, not both"}
		}
		out.ProviderKey = "provider"
		if s, ok := v.(string); ok {
			// As the flag takes it: comma-separated.
			var list []any
			for _, p := range strings.Split(s, ",") {
				if p = strings.TrimSpace(p); p != "" {
					list = append(list, p)
				}
			}
			v = list
		}
		delete(m, "provider")
		m["providers"] = v
	}
	err = fill(path, "", m, reflect.ValueOf(&out.Workload).Elem())
	var fe *FileError
	if errors.As(err, &fe) && out.ProviderKey == "provider" && strings.HasPrefix(fe.Field, "providers") {
		fe.Field = "provider" + strings.TrimPrefix(fe.Field, "providers")
	}
	return out, err
}

// decodeFile reads a JSON or YAML file (by extension: .json, .yaml or .yml)
// into the struct v points at, key by key, setting only the fields the file
// gives. Keys are the fields' json tags; errors name them under prefix. It
// works on the file's generic form rather than through the decoders' own
// struct mapping, so that every error names the key in the file's words,
// never a Go type.
func decodeFile(path, prefix string, v any) error {
	tree, err := readTree(path)
	if err != nil {
		return err
	}
	return fill(path, prefix, tree, reflect.ValueOf(v).Elem())
}

// readTree reads a JSON or YAML file into its generic form.
func readTree(path string) (any, error) {
	ext := strings.ToLower(filepath.Ext(path))
	if ext != ".json" && ext != ".yaml" && ext != ".yml" {
		return nil, &FileError{Path: path, Msg: fmt.Sprintf("want a .json, .yaml or .yml file, not %q", ext)}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &FileError{Path: path, Msg: err.Error()}
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, &FileError{Path: path, Msg: "the file is empty"}
	}
	var tree any
	switch ext {
	case ".json":
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(&tree); err != nil {
			return nil, &FileError{Path: path, Msg: jsonSyntax(data, err)}
		}
		if _, err := dec.Token(); err != io.EOF {
			return nil, &FileError{Path: path, Msg: "not one JSON object: more follows it"}
		}
	default:
		if err := yaml.Unmarshal(data, &tree); err != nil {
			return nil, &FileError{Path: path, Msg: "not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
		}
	}
	return tree, nil
}

// jsonSyntax describes a JSON syntax error with its line.
func jsonSyntax(data []byte, err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line := 1 + bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n"))
		return fmt.Sprintf("not valid JSON: line %d: %s", line, strings.TrimPrefix(se.Error(), "json: "))
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "not valid JSON: it ends too soon"
	}
	return "not valid JSON: " + strings.TrimPrefix(err.Error(), "json: ")
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

// fill sets dst from node, the generic form of the key at path.
func fill(file, path string, node any, dst reflect.Value) error {
	bad := func(format string, args ...any) error {
		return &FileError{Path: file, Field: path, Msg: fmt.Sprintf(format, args...)}
	}
	if dst.Addr().Type().Implements(textUnmarshaler) {
		s, ok := node.(string)
		if !ok {
			return bad("want a duration such as \"1008h\", not %s", show(node))
		}
		if err := dst.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
			return bad("want a duration such as \"1008h\", not %q", s)
		}
		return nil
	}
	switch dst.Kind() {
	case reflect.Struct:
		m, ok := node.(map[string]any)
		if !ok {
			return bad("want an object of keys, not %s", show(node))
		}
		for key, sub := range m {
			f, ok := fieldByTag(dst, key)
			if !ok {
				return &FileError{Path: file, Field: join(path, key), Msg: "unknown key"}
			}
			if err := fill(file, join(path, key), sub, f); err != nil {
				return err
			}
		}
		return nil
	case reflect.Float64:
		x, ok := number(node)
		if !ok {
			return bad("want a number, not %s", show(node))
		}
		dst.SetFloat(x)
		return nil
	case reflect.Int:
		x, ok := number(node)
		if !ok || x != math.Trunc(x) || math.Abs(x) > 1<<53 {
			return bad("want a whole number, not %s", show(node))
		}
		dst.SetInt(int64(x))
		return nil
	case reflect.String:
		s, ok := node.(string)
		if !ok {
			return bad("want a string, not %s", show(node))
		}
		dst.SetString(s)
		return nil
	case reflect.Slice:
		list, ok := node.([]any)
		if !ok {
			return bad("want a list, not %s", show(node))
		}
		out := reflect.MakeSlice(dst.Type(), len(list), len(list))
		for i, item := range list {
			if err := fill(file, fmt.Sprintf("%s[%d]", path, i), item, out.Index(i)); err != nil {
				return err
			}
		}
		dst.Set(out)
		return nil
	}
	return bad("cannot be set from a file")
}

// fieldByTag returns the field of a struct whose json tag names key.
func fieldByTag(v reflect.Value, key string) (reflect.Value, bool) {
	t := v.Type()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name == key && t.Field(i).IsExported() {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

// number reads a JSON number or a YAML integer or float. YAML's .nan and
// .inf are numbers here; Validate refuses them, naming the key.
func number(node any) (float64, bool) {
	switch x := node.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		return f, err == nil
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	}
	return 0, false
}

// show describes a value of the wrong shape for an error message.
func show(node any) string {
	switch x := node.(type) {
	case nil:
		return "null"
	case string:
		return strconv.Quote(x)
	case map[string]any, map[any]any:
		return "an object"
	case []any:
		return "a list"
	case bool:
		return strconv.FormatBool(x)
	}
	return fmt.Sprint(node)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
