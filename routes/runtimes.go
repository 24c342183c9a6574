package routes

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/go-chi/chi/v5"

	"lorrycontroller.dev/lc/confgit"
)

// runtimeJSON is a runtime section of the configuration in use.
type runtimeJSON struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	ID      string `json:"id"`
	Python  string `json:"python"`
	Path    string `json:"path"`
	Commit  string `json:"commit"`
}

func (s *Server) runtimes(w http.ResponseWriter, r *http.Request) error {
	st, err := s.ConfigState(r.Context())
	if err != nil {
		return err
	}
	list := []runtimeJSON{}
	for _, rt := range st.Runtimes {
		list = append(list, runtimeJSON(rt))
	}
	return ok(w, map[string][]runtimeJSON{"runtimes": list})
}

// runtimeTar streams the runtime directory of a tree id as a tar. An id
// of CONFGIT's history is served as long as a job handed it out is
// remembered, so a minion can build the runtime it was handed after
// CONFGIT moved on. The content of an id never changes, so
// it may be cached for good.
func (s *Server) runtimeTar(w http.ResponseWriter, r *http.Request) error {
	// chi gives the name as it was escaped in the URL.
	name, err := url.PathUnescape(chi.URLParam(r, "name"))
	id := chi.URLParam(r, "id")
	notFound := errorf(http.StatusNotFound, "no runtime %q with id %q", name, id)
	if err != nil || confgit.ValidateName(name) != nil {
		return notFound
	}
	hist, ok := s.History()
	if !ok {
		return notFound
	}
	// A tree id alone would serve any directory of CONFGIT that looks like
	// a runtime under any name: the name must be the one the id was
	// configured or handed out with.
	ok, err = s.RuntimeIs(r.Context(), name, id)
	if err != nil {
		return err
	}
	if !ok {
		return notFound
	}
	a, err := hist.RuntimeArchive(id)
	if errors.Is(err, confgit.ErrNoRuntime) {
		return notFound
	}
	if err != nil {
		return err
	}
	defer a.Close()
	w.Header().Set("Content-Type", "application/x-tar")
	w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	if err := a.WriteTar(r.Context(), w); err != nil {
		// The answer has begun: cut it off, so the minion sees a broken
		// download rather than a short archive.
		s.Log.Warn("runtime archive", "runtime", name, "id", id, "err", err)
		panic(http.ErrAbortHandler)
	}
	return nil
}
