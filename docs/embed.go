// Package docs carries the machine-readable description of the /1.0 API,
// docs/openapi.yaml, into the WEBAPP, which serves it at
// /1.0/openapi.yaml. The file itself is what operators and tools read:
// embedding it, rather than copying it, leaves one file to keep right.
package docs

import _ "embed"

// OpenAPI is docs/openapi.yaml, the OpenAPI 3.1 document of the /1.0 API.
//
//go:embed openapi.yaml
var OpenAPI []byte
