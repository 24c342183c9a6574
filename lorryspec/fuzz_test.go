package lorryspec

import (
	"bytes"
	"encoding/json"
	"testing"
)

// The seeds of the fuzz targets are in testdata/fuzz/<target>; go test
// runs them as tests.

// maxFuzzInput bounds the inputs of the fuzz targets: what they look for
// shows in small inputs, and a parse may take time and memory in
// proportion to its input, not beyond.
const maxFuzzInput = 16 << 10

// FuzzParseFile: no .lorry file, JSON or YAML, panics. What parses is made
// of JSON values, which parse again, as JSON, to the same values; specs
// that Read accepts decode.
func FuzzParseFile(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzInput {
			t.Skip()
		}
		entries, err := ParseFile(data)
		if err != nil {
			return
		}
		good := map[string]any{}
		for name, e := range entries {
			if e.Err == nil {
				good[name] = e.Value
				Check(e.Value)
			}
		}
		text, err := json.Marshal(good)
		if err != nil {
			t.Fatalf("the values of %q are not JSON: %v", data, err)
		}
		again, err := ParseFile(text)
		if err != nil {
			t.Fatalf("%s, the JSON of %q, does not parse: %v", text, data, err)
		}
		if len(again) != len(good) {
			t.Fatalf("%s parses to %d entries; want %d", text, len(again), len(good))
		}
		for name, e := range again {
			b, err := json.Marshal(e.Value)
			if err != nil || e.Err != nil {
				t.Fatalf("entry %q parsed again: %v, %v", name, e.Err, err)
			}
			want, _ := json.Marshal(good[name])
			if !bytes.Equal(b, want) {
				t.Errorf("entry %q parsed again is %s; want %s", name, b, want)
			}
		}

		specs, err := Read(data)
		if err != nil {
			return
		}
		for _, s := range specs {
			if _, err := s.Decode(); err != nil {
				t.Errorf("spec %q was read but does not decode: %v", s.Name, err)
			}
		}
	})
}
