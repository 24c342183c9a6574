package routes

import (
	"net/http"
	"testing"

	validator "github.com/pb33f/libopenapi-validator"

	"lorrycontroller.dev/lc/openapitest"
)

// A second reading of docs/openapi.yaml, by a validator written apart from
// kin-openapi's (pb33f's libopenapi-validator), checks every answer and
// request that the first checks: what one tool lets through, the other
// may not. openapitest holds it, for the scenario tests' proxy too.

// secondValidator is libopenapi-validator's reading of docs/openapi.yaml.
func secondValidator() (validator.Validator, error) {
	doc, err := openapitest.Load()
	if err != nil {
		return nil, err
	}
	return doc.Second(), nil
}

// TestOpenAPIDocumentIsValidToSecondValidator: libopenapi-validator
// reads the document, and finds it valid.
func TestOpenAPIDocumentIsValidToSecondValidator(t *testing.T) {
	if _, err := secondValidator(); err != nil {
		t.Fatal(err)
	}
}

var joinValidationErrors = openapitest.ValidationErrors

// checkAnswerSecond checks the answer a to r, a request to the document's
// path, with the second validator.
func checkAnswerSecond(r *http.Request, a *teeWriter, path string) error {
	doc, err := openapitest.Load()
	if err != nil {
		return err
	}
	return doc.SecondAnswer(r, path, openapitest.Answer{Status: a.code, Header: a.Header(), Body: a.body.Bytes()})
}

// checkRequestSecond checks req, to the document's path, with the second
// validator.
func checkRequestSecond(req *http.Request, body []byte, path string) error {
	doc, err := openapitest.Load()
	if err != nil {
		return err
	}
	return doc.SecondRequest(req, body, path)
}
