// Package lorryspec reads .lorry files: specs of what lorry mirrors, keyed
// by name, in JSON or YAML. The WEBAPP checks them when it reads its
// configuration; lorry decodes them when it mirrors.
package lorryspec

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Types are the values a spec's "type" may take.
var Types = []string{"git", "tarball", "zip", "gzip", "raw-file", "svn", "hg", "bzr", "cvs"}

// Check tells whether v is a usable spec and returns its type: an object
// with a known "type" and the keys that type needs, of the right kinds.
// Unknown keys are allowed; they are kept and ignored.
func Check(v any) (string, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return "", fmt.Errorf("must be an object, not %s", KindOf(v))
	}
	tv, ok := m["type"]
	if !ok {
		return "", keyError("type", errors.New(`has no "type"`))
	}
	typ, ok := tv.(string)
	if !ok {
		return "", keyError("type", fmt.Errorf(`"type" must be a string, not %s`, KindOf(tv)))
	}
	if !slices.Contains(Types, typ) {
		return "", keyError("type", fmt.Errorf("unknown type %q (want one of %s)", typ, strings.Join(Types, ", ")))
	}
	_, err := Spec{Type: typ, Raw: m}.Decode()
	return typ, err
}

// Spec is one named spec of a .lorry file.
type Spec struct {
	Name string
	Type string
	Raw  map[string]any // the whole spec, unknown keys included
}

// Read parses a .lorry file into its specs, sorted by name. Unlike the
// WEBAPP, which skips what is broken, lorry refuses a file with any broken
// spec, naming it.
func Read(data []byte) ([]Spec, error) {
	entries, err := ParseFile(data)
	if err != nil {
		return nil, err
	}
	var specs []Spec
	for _, name := range slices.Sorted(maps.Keys(entries)) {
		e := entries[name]
		if e.Err != nil {
			return nil, fmt.Errorf("spec %q: %w", name, e.Err)
		}
		typ, err := Check(e.Value)
		if err != nil {
			return nil, fmt.Errorf("spec %q: %w", name, err)
		}
		specs = append(specs, Spec{Name: name, Type: typ, Raw: e.Value.(map[string]any)})
	}
	if len(specs) == 0 {
		return nil, errors.New("no specs in the file")
	}
	return specs, nil
}

// Decode returns the spec as the struct of its type: *Git, *Archive (for
// tarball, zip and gzip), *RawFile, *Svn, *Hg, *Bzr or *Cvs, after checking
// the keys that type needs.
func (s Spec) Decode() (any, error) {
	var v interface{ check(typ string) error }
	switch s.Type {
	case "git":
		v = &Git{}
	case "tarball", "zip", "gzip":
		v = &Archive{}
	case "raw-file":
		v = &RawFile{}
	case "svn":
		v = &Svn{}
	case "hg":
		v = &Hg{}
	case "bzr":
		v = &Bzr{}
	case "cvs":
		v = &Cvs{}
	default:
		return nil, fmt.Errorf("unknown type %q", s.Type)
	}
	b, err := json.Marshal(s.Raw)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return nil, keyError(strings.SplitN(te.Field, ".", 2)[0],
				fmt.Errorf("%q must be %s, not %s", te.Field, kindOfType(te.Type.Kind()), jsonValueKind[te.Value]))
		}
		return nil, err
	}
	if err := v.check(s.Type); err != nil {
		return nil, err
	}
	return v, nil
}

// jsonValueKind renames encoding/json's names of JSON values.
var jsonValueKind = map[string]string{
	"array": "a list", "object": "an object", "number": "a number", "string": "a string", "bool": "a boolean",
}
