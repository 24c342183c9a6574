package routes

import (
	"net/http"

	"github.com/go-chi/chi/v5"
)

// backupRoutes: backups of the state database, an admin's.
func (s *Server) backupRoutes(r chi.Router) {
	r.Post("/backup", s.handle(s.backup))
}

// backup writes a backup of the state database into the backup
// directory, and with keep removes the older ones beyond that many.
func (s *Server) backup(w http.ResponseWriter, r *http.Request) error {
	p, err := s.readParams(r)
	if err != nil {
		return err
	}
	keep, err := p.optionalInt("keep")
	if err != nil {
		return err
	}
	var n int
	if keep != nil {
		n = int(*keep)
	}
	res, err := s.Backup(r.Context(), n)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{
		"file":           res.Name,
		"size":           res.Size,
		"schema_version": res.SchemaVersion,
		"integrity":      res.Integrity,
		"removed":        list(res.Removed),
	})
}
