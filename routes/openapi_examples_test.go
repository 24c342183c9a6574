package routes

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// TestOpenAPIExamples checks the examples of docs/openapi.yaml, which
// tools that read it show and send (documentation, mock servers, contract
// testers): every parameter, every request body and every success answer
// with a schema has one, and every example, wherever it stands, is valid
// by its schema under JSON Schema 2020-12 (which the loader checks too,
// by its own rules).
func TestOpenAPIExamples(t *testing.T) {
	doc := openAPISpec(t)
	checked := 0
	for _, path := range slices.Sorted(func(yield func(string) bool) {
		for p := range doc.Paths.Map() {
			if !yield(p) {
				return
			}
		}
	}) {
		item := doc.Paths.Value(path)
		ops := item.Operations()
		for _, method := range slices.Sorted(func(yield func(string) bool) {
			for m := range ops {
				if !yield(m) {
					return
				}
			}
		}) {
			op := ops[method]
			at := method + " " + path
			for _, p := range append(slices.Clone(item.Parameters), op.Parameters...) {
				p := p.Value
				checked += checkExamples(t, fmt.Sprintf("%s: parameter %s", at, p.Name), p.Schema, p.Example, p.Examples, true)
			}
			if op.RequestBody != nil {
				for ct, mt := range op.RequestBody.Value.Content {
					checked += checkExamples(t, fmt.Sprintf("%s: request body %s", at, ct), mt.Schema, mt.Example, mt.Examples, true)
				}
			}
			for code, resp := range op.Responses.Map() {
				for ct, mt := range resp.Value.Content {
					// A success answer with a schema is the main one; an
					// HTML page, a tar or this document has none to check
					// an example by.
					main := strings.HasPrefix(code, "2") && mt.Schema != nil
					checked += checkExamples(t, fmt.Sprintf("%s: answer %s %s", at, code, ct), mt.Schema, mt.Example, mt.Examples, main)
				}
			}
		}
	}
	if checked < 100 {
		t.Errorf("checked %d examples; the walk misses some", checked)
	}
}

// checkExamples checks the example, or the examples, of one parameter or
// media type by its schema, and that there is one if need be. It answers
// how many it checked.
func checkExamples(t *testing.T, what string, schema *openapi3.SchemaRef, example any, examples openapi3.Examples, need bool) int {
	t.Helper()
	values := map[string]any{}
	if example != nil {
		values["example"] = example
	}
	for name, ex := range examples {
		if ex.Value == nil || ex.Value.Value == nil {
			t.Errorf("%s: example %q has no value", what, name)
			continue
		}
		values["example "+name] = ex.Value.Value
	}
	if len(values) == 0 {
		if need {
			t.Errorf("%s has no example", what)
		}
		return 0
	}
	if schema == nil || schema.Value == nil {
		t.Errorf("%s has an example but no schema to check it by", what)
		return 0
	}
	for name, v := range values {
		if err := schema.Value.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
			t.Errorf("%s: its %s is not valid by its schema: %v", what, name, err)
		}
	}
	return len(values)
}
