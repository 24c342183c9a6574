// Package openapitest checks requests and answers of the /1.0 API against
// docs/openapi.yaml in tests, with two validators written apart:
// kin-openapi's and pb33f's libopenapi-validator. What one tool lets
// through, the other may not, so a test asks both.
package openapitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	vErrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/helpers"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"lorrycontroller.dev/lc/docs"
)

// Doc is docs/openapi.yaml as both validators read it.
type Doc struct {
	// Kin is the document as kin-openapi reads it.
	Kin *openapi3.T

	second validator.Validator
	model  *v3.Document
	// mu keeps libopenapi-validator to one check at a time: tests'
	// servers answer from many goroutines.
	mu sync.Mutex

	routes []route
}

// route is a path of the document as a pattern of escaped URL paths.
type route struct {
	path   string
	re     *regexp.Regexp
	params []string
	// literal is the length of its text outside parameters: of two
	// paths that match, the longer is the more specific.
	literal int
}

var loaded struct {
	once sync.Once
	doc  *Doc
	err  error
}

// Load reads docs/openapi.yaml with both validators, once, and checks
// that each finds it a valid document.
func Load() (*Doc, error) {
	loaded.once.Do(func() { loaded.doc, loaded.err = load() })
	return loaded.doc, loaded.err
}

func load() (*Doc, error) {
	loader := openapi3.NewLoader()
	kin, err := loader.LoadFromData(docs.OpenAPI)
	if err == nil {
		err = kin.Validate(loader.Context)
	}
	if err != nil {
		return nil, fmt.Errorf("docs/openapi.yaml, read by kin-openapi: %w", err)
	}
	d := &Doc{Kin: kin}
	if d.second, d.model, err = loadSecond(); err != nil {
		return nil, fmt.Errorf("docs/openapi.yaml, read by libopenapi-validator: %w", err)
	}
	for path := range kin.Paths.Map() {
		d.routes = append(d.routes, newRoute(path))
	}
	return d, nil
}

func loadSecond() (validator.Validator, *v3.Document, error) {
	doc, err := libopenapi.NewDocument(docs.OpenAPI)
	if err != nil {
		return nil, nil, err
	}
	v, errs := validator.NewValidator(doc, config.WithURLEncodedBodyValidation(), config.WithoutSecurityValidation())
	if len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		return nil, nil, ValidationErrors(verrs)
	}
	m, err := doc.BuildV3Model()
	if err != nil {
		return nil, nil, err
	}
	return v, &m.Model, nil
}

var paramRE = regexp.MustCompile(`\{([^}]+)\}`)

// newRoute makes the pattern of a document's path. A lorry's path, the
// parameter "path", may hold slashes, escaped or not, as the WEBAPP takes
// it; every other parameter is one segment.
func newRoute(path string) route {
	r := route{path: path}
	var re strings.Builder
	re.WriteString("^")
	last := 0
	for _, m := range paramRE.FindAllStringSubmatchIndex(path, -1) {
		re.WriteString(regexp.QuoteMeta(path[last:m[0]]))
		r.literal += m[0] - last
		name := path[m[2]:m[3]]
		r.params = append(r.params, name)
		if name == "path" {
			re.WriteString("(.+)")
		} else {
			re.WriteString("([^/]+)")
		}
		last = m[1]
	}
	re.WriteString(regexp.QuoteMeta(path[last:]))
	r.literal += len(path) - last
	re.WriteString("$")
	r.re = regexp.MustCompile(re.String())
	return r
}

// Find is the document's path that an escaped URL path is a request to,
// with its parameters unescaped, or "" when none is.
func (d *Doc) Find(escapedPath string) (string, map[string]string) {
	best, bestParams := -1, map[string]string(nil)
	for i, r := range d.routes {
		m := r.re.FindStringSubmatch(escapedPath)
		if m == nil || best >= 0 && d.routes[best].literal >= r.literal {
			continue
		}
		params := map[string]string{}
		ok := true
		for j, name := range r.params {
			v, err := url.PathUnescape(m[j+1])
			if err != nil {
				ok = false
				break
			}
			params[name] = v
		}
		if ok {
			best, bestParams = i, params
		}
	}
	if best < 0 {
		return "", nil
	}
	return d.routes[best].path, bestParams
}

// Canonical is req's URL as the document names it: each parameter one
// escaped segment, as a client made from the document sends it.
func Canonical(u *url.URL, path string, params map[string]string) *url.URL {
	c := *u
	c.Path = paramRE.ReplaceAllStringFunc(path, func(p string) string { return params[p[1:len(p)-1]] })
	c.RawPath = paramRE.ReplaceAllStringFunc(path, func(p string) string { return url.PathEscape(params[p[1:len(p)-1]]) })
	return &c
}

// Second is libopenapi-validator's reading of the document, for a test
// that asks it what Doc's checks do not. It checks one thing at a time.
func (d *Doc) Second() validator.Validator { return d.second }

// Answer is one answer to check.
type Answer struct {
	Status int
	Header http.Header
	Body   []byte
}

// CheckAnswer checks a, the answer to r, a request to the document's path
// with params, with both validators. A request to no path of the
// document, or with a method its path lacks, must be answered with the
// Error object.
func (d *Doc) CheckAnswer(r *http.Request, path string, params map[string]string, a Answer) error {
	item := d.Kin.Paths.Value(path)
	if item == nil || item.GetOperation(r.Method) == nil {
		if a.Status == http.StatusNotFound || a.Status == http.StatusMethodNotAllowed {
			return d.checkError(r, a)
		}
		return fmt.Errorf("%s %s is not in the document", r.Method, path)
	}
	r = r.Clone(context.Background())
	r.URL = Canonical(r.URL, path, params)
	return errors.Join(d.FirstAnswer(r, path, params, a), d.SecondAnswer(r, path, a))
}

// FirstAnswer checks a, the answer to r, with kin-openapi.
func (d *Doc) FirstAnswer(r *http.Request, path string, params map[string]string, a Answer) error {
	item := d.Kin.Paths.Value(path)
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: r, PathParams: params,
			Route: &routers.Route{Spec: d.Kin, Path: path, PathItem: item, Method: r.Method, Operation: item.GetOperation(r.Method)}},
		Status:  a.Status,
		Header:  a.Header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	in.SetBodyBytes(a.Body)
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		return fmt.Errorf("kin-openapi: %w", err)
	}
	return nil
}

// SecondAnswer checks a, the answer to r, a request to the document's
// path, with libopenapi-validator.
func (d *Doc) SecondAnswer(r *http.Request, path string, a Answer) error {
	item := d.model.Paths.PathItems.GetOrZero(path)
	if item == nil {
		return fmt.Errorf("libopenapi-validator finds no path %s", path)
	}
	resp := &http.Response{StatusCode: a.Status, Header: a.Header.Clone(), Request: r,
		Body: io.NopCloser(bytes.NewReader(a.Body))}
	d.mu.Lock()
	defer d.mu.Unlock()
	if ok, errs := d.second.GetResponseBodyValidator().ValidateResponseBodyWithPathItem(r, resp, item, path); !ok {
		return fmt.Errorf("libopenapi-validator:%w", ValidationErrors(errs))
	}
	return nil
}

// checkError checks that a is the Error object, with both validators'
// reading of its schema.
func (d *Doc) checkError(r *http.Request, a Answer) error {
	if r.Method == http.MethodHead {
		return nil
	}
	if ct := a.Header.Get("Content-Type"); ct != "application/json" {
		return fmt.Errorf("no route, and the answer is %q, not the Error object", ct)
	}
	var v any
	if err := json.Unmarshal(a.Body, &v); err != nil {
		return err
	}
	if err := d.Kin.Components.Schemas["Error"].Value.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
		return fmt.Errorf("kin-openapi: %w", err)
	}
	return nil
}

// CheckRequest checks req, with body, a request to the document's path
// with params, with both validators.
func (d *Doc) CheckRequest(req *http.Request, body []byte, path string, params map[string]string) error {
	item := d.Kin.Paths.Value(path)
	if item == nil || item.GetOperation(req.Method) == nil {
		return fmt.Errorf("%s %s is not in the document", req.Method, path)
	}
	check := req.Clone(context.Background())
	check.URL = Canonical(req.URL, path, params)
	return errors.Join(d.FirstRequest(check, body, path, params), d.SecondRequest(check, body, path))
}

// FirstRequest checks req, with body, with kin-openapi.
func (d *Doc) FirstRequest(req *http.Request, body []byte, path string, params map[string]string) error {
	item := d.Kin.Paths.Value(path)
	check := req.Clone(context.Background())
	check.Body = io.NopCloser(bytes.NewReader(body))
	in := &openapi3filter.RequestValidationInput{Request: check, PathParams: params,
		Route:   &routers.Route{Spec: d.Kin, Path: path, PathItem: item, Method: req.Method, Operation: item.GetOperation(req.Method)},
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true}}
	if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
		return fmt.Errorf("kin-openapi: %w", err)
	}
	return nil
}

// SecondRequest checks req, with body, a request to the document's path,
// with libopenapi-validator.
func (d *Doc) SecondRequest(req *http.Request, body []byte, path string) error {
	item := d.model.Paths.PathItems.GetOrZero(path)
	if item == nil {
		return fmt.Errorf("libopenapi-validator finds no path %s", path)
	}
	check := req.Clone(context.Background())
	check.Body = io.NopCloser(bytes.NewReader(body))
	d.mu.Lock()
	defer d.mu.Unlock()
	if ok, errs := d.second.ValidateHttpRequestSyncWithPathItem(check, item, path); !ok {
		errs = slices.DeleteFunc(errs, func(e *vErrors.ValidationError) bool {
			// This check reads a form's value once unescaped, and so
			// finds in it the "/" or ":" that the client escaped, as an
			// encoding without allowReserved asks: it holds for no form.
			return e.ValidationType == helpers.URLEncodedValidation && e.ValidationSubType == helpers.ReservedValues
		})
		if len(errs) > 0 {
			return fmt.Errorf("libopenapi-validator:%w", ValidationErrors(errs))
		}
	}
	return nil
}

// ValidationErrors is libopenapi-validator's errors as one, each with
// the fields it names.
func ValidationErrors(errs []*vErrors.ValidationError) error {
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "\n  %s: %s", e.Message, e.Reason)
		for _, se := range e.SchemaValidationErrors {
			fmt.Fprintf(&b, "\n    at %s: %s", se.FieldPath, se.Reason)
		}
	}
	return fmt.Errorf("%s", b.String())
}
