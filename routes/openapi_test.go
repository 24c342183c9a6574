package routes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/go-chi/chi/v5"

	"lorrycontroller.dev/lc/docs"
)

// The API's description, docs/openapi.yaml, is checked three ways: it is
// a valid OpenAPI document; its routes are exactly the route table's /1.0
// routes; and every answer that the tests' servers give (newTestServer
// wraps each in checkAnswers) is one the document allows, status code,
// content type and body.

var openAPIDoc struct {
	once sync.Once
	doc  *openapi3.T
	err  error
}

// openAPISpec loads and validates docs/openapi.yaml, once.
func openAPISpec(t testing.TB) *openapi3.T {
	t.Helper()
	openAPIDoc.once.Do(func() {
		loader := openapi3.NewLoader()
		openAPIDoc.doc, openAPIDoc.err = loader.LoadFromData(docs.OpenAPI)
		if openAPIDoc.err == nil {
			openAPIDoc.err = openAPIDoc.doc.Validate(loader.Context)
		}
	})
	if openAPIDoc.err != nil {
		t.Fatalf("docs/openapi.yaml: %v", openAPIDoc.err)
	}
	return openAPIDoc.doc
}

// openAPIPath is the document's path of a chi route pattern: the lorry
// paths, chi's wildcard, are its {path}.
func openAPIPath(pattern string) string {
	if p, ok := strings.CutSuffix(pattern, "/*"); ok {
		return p + "/{path}"
	}
	return pattern
}

// teeWriter keeps a copy of the answer it passes on.
type teeWriter struct {
	http.ResponseWriter
	code  int
	wrote bool
	body  bytes.Buffer
	err   error
}

func (w *teeWriter) WriteHeader(code int) {
	if !w.wrote {
		w.code, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *teeWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.code, w.wrote = http.StatusOK, true
	}
	w.body.Write(b)
	n, err := w.ResponseWriter.Write(b)
	if err != nil && w.err == nil {
		w.err = err
	}
	return n, err
}

// checkAnswers wraps h, the handler of a test's server, so that each
// answer under /1.0 is checked against docs/openapi.yaml, and a test
// fails on one the document does not allow. Benchmarks are left alone.
func checkAnswers(t testing.TB, h http.Handler) http.Handler {
	t.Helper()
	if _, bench := t.(*testing.B); bench {
		return h
	}
	doc := openAPISpec(t)
	mux := h.(*chi.Mux)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tw := &teeWriter{ResponseWriter: w}
		h.ServeHTTP(tw, r)
		if err := checkAnswer(doc, mux, r, tw); err != nil {
			t.Errorf("%s %s answered %d, which docs/openapi.yaml does not allow: %v\nbody: %.500s",
				r.Method, r.URL.Path, tw.code, err, tw.body.Bytes())
		}
	})
}

// checkAnswer checks one answer. One that did not reach the client whole
// is not checked.
func checkAnswer(doc *openapi3.T, mux *chi.Mux, r *http.Request, a *teeWriter) error {
	if a.err != nil || !strings.HasPrefix(r.URL.Path, "/1.0/") {
		return nil
	}
	if !a.wrote {
		a.code = http.StatusOK
	}
	routePath := r.URL.RawPath
	if routePath == "" {
		routePath = r.URL.Path
	}
	pattern := mux.Find(chi.NewRouteContext(), r.Method, routePath)
	if pattern == "" {
		// No such route, or not for this method: the Error object.
		return checkError(doc, a)
	}
	path := openAPIPath(pattern)
	item := doc.Paths.Value(path)
	if item == nil || item.GetOperation(r.Method) == nil {
		return fmt.Errorf("the route %s %s is not in the document", r.Method, path)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: r,
			Route: &routers.Route{Spec: doc, Path: path, PathItem: item, Method: r.Method, Operation: item.GetOperation(r.Method)}},
		Status:  a.code,
		Header:  a.Header(),
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	in.SetBodyBytes(a.body.Bytes())
	return errors.Join(openapi3filter.ValidateResponse(context.Background(), in), checkAnswerSecond(r, a, path),
		checkJSONIntegers(a))
}

func checkError(doc *openapi3.T, a *teeWriter) error {
	if ct := a.Header().Get("Content-Type"); ct != "application/json" {
		return fmt.Errorf("no route, and the answer is %q, not the Error object", ct)
	}
	var v any
	if err := json.Unmarshal(a.body.Bytes(), &v); err != nil {
		return err
	}
	return doc.Components.Schemas["Error"].Value.VisitJSON(v, openapi3.EnableJSONSchema2020())
}

func TestOpenAPIDocumentIsValid(t *testing.T) {
	doc := openAPISpec(t)
	if !doc.IsOpenAPI31OrLater() {
		t.Errorf("docs/openapi.yaml is OpenAPI %s; want 3.1", doc.OpenAPI)
	}
	// The embedded copy is the file itself, which operators read.
	onDisk, err := os.ReadFile(filepath.Join("..", "docs", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(onDisk, docs.OpenAPI) {
		t.Error("the embedded docs.OpenAPI is not docs/openapi.yaml")
	}
}

// TestOpenAPIRoutesAreTheRouteTable walks the route table, with every
// route on (sign-in, pretend-time), and compares its /1.0 routes with the
// document's paths and methods, both ways.
func TestOpenAPIRoutesAreTheRouteTable(t *testing.T) {
	doc := openAPISpec(t)
	ts := newTestServer(t, func(s *Server) { s.InsecureNoAuth = false })
	served := map[string]bool{}
	err := chi.Walk(ts.Handler().(chi.Routes), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if strings.HasPrefix(route, "/1.0/") {
			served[method+" "+openAPIPath(route)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	described := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			described[method+" "+path] = true
		}
	}
	for _, r := range slices.Sorted(mapKeys(served)) {
		if !described[r] {
			t.Errorf("%s is served but not in docs/openapi.yaml", r)
		}
	}
	for _, r := range slices.Sorted(mapKeys(described)) {
		if !served[r] {
			t.Errorf("%s is in docs/openapi.yaml but not served", r)
		}
	}
	if len(served) < 60 {
		t.Errorf("walked %d routes under /1.0; the walk misses some", len(served))
	}
}

func mapKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func TestOpenAPIServed(t *testing.T) {
	ts := newTestServer(t)
	resp, err := http.Get(ts.url + "/1.0/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	body.ReadFrom(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/yaml" || !bytes.Equal(body.Bytes(), docs.OpenAPI) {
		t.Errorf("GET /1.0/openapi.yaml = %d %q, %d bytes; want 200 application/yaml, docs/openapi.yaml's %d bytes",
			resp.StatusCode, resp.Header.Get("Content-Type"), body.Len(), len(docs.OpenAPI))
	}
	if _, err := openapi3.NewLoader().LoadFromData(body.Bytes()); err != nil {
		t.Errorf("the document served does not load: %v", err)
	}
}

// TestOpenAPIAndAPIMdNameTheSameRoutes compares the routes of the table
// "Routes at a glance" of docs/api.md with the document's: the two
// describe one API. HEAD is left out; api.md tells of it in the text.
func TestOpenAPIAndAPIMdNameTheSameRoutes(t *testing.T) {
	doc := openAPISpec(t)
	md, err := os.ReadFile(filepath.Join("..", "docs", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, _ := strings.Cut(string(md), "\n## Routes at a glance\n")
	table, _, _ = strings.Cut(table, "\n## ")
	params := strings.NewReplacer("<path>", "{path}", "<id>", "{id}", "<name>", "{name}")
	inMd := map[string]bool{}
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			continue
		}
		for _, method := range strings.Split(cells[1], ",") {
			method = strings.TrimSpace(method)
			if method != "GET" && method != "POST" {
				continue
			}
			for _, quoted := range strings.Split(cells[2], "`") {
				if strings.HasPrefix(quoted, "/1.0/") {
					inMd[method+" "+params.Replace(quoted)] = true
				}
			}
		}
	}
	described := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			if method != http.MethodHead {
				described[method+" "+path] = true
			}
		}
	}
	for _, r := range slices.Sorted(mapKeys(described)) {
		if !inMd[r] {
			t.Errorf("%s is in docs/openapi.yaml but not in the table of docs/api.md", r)
		}
	}
	for _, r := range slices.Sorted(mapKeys(inMd)) {
		if !described[r] {
			t.Errorf("%s is in the table of docs/api.md but not in docs/openapi.yaml", r)
		}
	}
}
