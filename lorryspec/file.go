package lorryspec

import (
	"bytes"
	"fmt"
	"math"
	"time"

	"go.yaml.in/yaml/v3"
)

// Entry is one value of a .lorry file, or why it cannot be used.
type Entry struct {
	Value any
	Err   error
}

// ParseFile reads a .lorry file: a mapping of names to specs, in JSON
// or, failing that, YAML. Values end up as JSON values, since the spec is
// stored and handed to lorry as JSON.
func ParseFile(data []byte) (map[string]Entry, error) {
	v, jerr := DecodeJSON(data)
	if jerr == nil {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("must be a mapping of names to specs, not %s", KindOf(v))
		}
		out := make(map[string]Entry, len(m))
		for k, val := range m {
			out[k] = Entry{Value: val}
		}
		return out, nil
	}
	var y any
	if err := yaml.Unmarshal(data, &y); err != nil {
		if looksLikeJSON(data) {
			return nil, jerr
		}
		return nil, fmt.Errorf("invalid YAML: %v", err)
	}
	out := map[string]Entry{}
	switch m := y.(type) {
	case map[string]any:
		for k, val := range m {
			jv, err := yamlToJSON(val)
			out[k] = Entry{Value: jv, Err: err}
		}
	case map[any]any:
		for k, val := range m {
			name, ok := k.(string)
			if !ok {
				name = fmt.Sprint(k)
				out[name] = Entry{Err: fmt.Errorf("name must be a string, not %T", k)}
				continue
			}
			jv, err := yamlToJSON(val)
			out[name] = Entry{Value: jv, Err: err}
		}
	default:
		if looksLikeJSON(data) {
			return nil, jerr
		}
		return nil, fmt.Errorf("must be a mapping of names to specs, not %s", yamlKind(y))
	}
	return out, nil
}

// looksLikeJSON decides which of the two parse errors is the useful one.
func looksLikeJSON(data []byte) bool {
	t := bytes.TrimLeft(data, " \t\r\n\ufeff")
	return len(t) > 0 && (t[0] == '{' || t[0] == '[' || t[0] == '"')
}

func yamlKind(v any) string {
	switch v.(type) {
	case nil:
		return "an empty document"
	case []any:
		return "a list"
	default:
		return "a scalar"
	}
}

// yamlToJSON converts a decoded YAML value to the values encoding/json
// produces, refusing what JSON cannot hold.
func yamlToJSON(v any) (any, error) {
	switch x := v.(type) {
	case nil, bool, string, int, int64, uint64:
		return x, nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("%v cannot be represented in JSON", x)
		}
		return x, nil
	case time.Time:
		// Unquoted dates are timestamps to YAML; keep them as the text an
		// admin would have meant.
		if x.Equal(x.Truncate(24*time.Hour)) && x.Location() == time.UTC {
			return x.Format(time.DateOnly), nil
		}
		return x.Format(time.RFC3339Nano), nil
	case []any:
		out := make([]any, len(x))
		for i, item := range x {
			jv, err := yamlToJSON(item)
			if err != nil {
				return nil, err
			}
			out[i] = jv
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, item := range x {
			jv, err := yamlToJSON(item)
			if err != nil {
				return nil, err
			}
			out[k] = jv
		}
		return out, nil
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, item := range x {
			ks, ok := k.(string)
			if !ok {
				return nil, fmt.Errorf("key %v is not a string", k)
			}
			jv, err := yamlToJSON(item)
			if err != nil {
				return nil, err
			}
			out[ks] = jv
		}
		return out, nil
	default:
		return nil, fmt.Errorf("a %T cannot be represented in JSON", v)
	}
}
