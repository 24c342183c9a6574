package routes

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	vErrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/helpers"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"lorrycontroller.dev/lc/docs"
)

// A second reading of docs/openapi.yaml, by a validator written apart from
// kin-openapi's (pb33f's libopenapi-validator), checks every answer and
// request that the first checks: what one tool lets through, the other
// may not.

var secondDoc struct {
	once  sync.Once
	model *v3.Document
	v     validator.Validator
	err   error
	// mu keeps the validator to one answer at a time: the tests' servers
	// answer from many goroutines.
	mu sync.Mutex
}

// secondValidator loads docs/openapi.yaml into libopenapi-validator, once.
func secondValidator() (validator.Validator, *v3.Document, error) {
	secondDoc.once.Do(func() {
		doc, err := libopenapi.NewDocument(docs.OpenAPI)
		if err != nil {
			secondDoc.err = err
			return
		}
		v, errs := validator.NewValidator(doc, config.WithURLEncodedBodyValidation(), config.WithoutSecurityValidation())
		if len(errs) > 0 {
			secondDoc.err = errors.Join(errs...)
			return
		}
		if ok, verrs := v.ValidateDocument(); !ok {
			secondDoc.err = joinValidationErrors(verrs)
			return
		}
		m, err := doc.BuildV3Model()
		if err != nil {
			secondDoc.err = err
			return
		}
		secondDoc.v, secondDoc.model = v, &m.Model
	})
	if secondDoc.err != nil {
		return nil, nil, fmt.Errorf("docs/openapi.yaml, read by libopenapi-validator: %w", secondDoc.err)
	}
	return secondDoc.v, secondDoc.model, nil
}

// TestOpenAPIDocumentIsValidToSecondValidator: libopenapi-validator
// reads the document, and finds it valid.
func TestOpenAPIDocumentIsValidToSecondValidator(t *testing.T) {
	if _, _, err := secondValidator(); err != nil {
		t.Fatal(err)
	}
}

func joinValidationErrors(errs []*vErrors.ValidationError) error {
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "\n  %s: %s", e.Message, e.Reason)
		for _, se := range e.SchemaValidationErrors {
			fmt.Fprintf(&b, "\n    at %s: %s", se.FieldPath, se.Reason)
		}
	}
	return fmt.Errorf("%s", b.String())
}

// checkAnswerSecond checks the answer a to r, a request to the document's
// path, with the second validator.
func checkAnswerSecond(r *http.Request, a *teeWriter, path string) error {
	v, model, err := secondValidator()
	if err != nil {
		return err
	}
	item := model.Paths.PathItems.GetOrZero(path)
	if item == nil {
		return fmt.Errorf("libopenapi-validator finds no path %s", path)
	}
	resp := &http.Response{StatusCode: a.code, Header: a.Header().Clone(), Request: r,
		Body: io.NopCloser(bytes.NewReader(a.body.Bytes()))}
	secondDoc.mu.Lock()
	defer secondDoc.mu.Unlock()
	if ok, errs := v.GetResponseBodyValidator().ValidateResponseBodyWithPathItem(r, resp, item, path); !ok {
		return fmt.Errorf("libopenapi-validator:%w", joinValidationErrors(errs))
	}
	return nil
}

// checkRequestSecond checks req, to the document's path, with the second
// validator.
func checkRequestSecond(req *http.Request, body []byte, path string) error {
	v, model, err := secondValidator()
	if err != nil {
		return err
	}
	item := model.Paths.PathItems.GetOrZero(path)
	if item == nil {
		return fmt.Errorf("libopenapi-validator finds no path %s", path)
	}
	check := req.Clone(req.Context())
	check.Body = io.NopCloser(bytes.NewReader(body))
	secondDoc.mu.Lock()
	defer secondDoc.mu.Unlock()
	if ok, errs := v.ValidateHttpRequestSyncWithPathItem(check, item, path); !ok {
		errs = slices.DeleteFunc(errs, func(e *vErrors.ValidationError) bool {
			// This check reads a form's value once unescaped, and so
			// finds in it the "/" or ":" that the client escaped, as an
			// encoding without allowReserved asks: it holds for no form.
			return e.ValidationType == helpers.URLEncodedValidation && e.ValidationSubType == helpers.ReservedValues
		})
		if len(errs) > 0 {
			return fmt.Errorf("libopenapi-validator:%w", joinValidationErrors(errs))
		}
	}
	return nil
}
