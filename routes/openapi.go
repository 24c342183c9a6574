package routes

import (
	"net/http"

	"lorrycontroller.dev/lc/docs"
)

// openAPI serves docs/openapi.yaml, the description of this API, as built
// into the binary: the routes a tool reads of it are the ones this WEBAPP
// serves.
func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/yaml")
	_, err := w.Write(docs.OpenAPI)
	return err
}
