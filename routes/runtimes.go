package routes

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"

	"github.com/go-chi/chi/v5"

	"lorrycontroller/confgit"
	"lorrycontroller/statedb"
	"lorrycontroller/wire"
)

// KindScraper is the kind of job that runs a scraper in its runtime.
const KindScraper = confgit.KindScraper

// ConfigHistory reads what earlier commits of CONFGIT held, for scrapers:
// the files handed out with a job and the runtime directories minions
// build from. *confgit.Source is one; a ConfigReader that is not one cannot
// hand out scrapers or serve runtimes.
type ConfigHistory interface {
	ReadFiles(ctx context.Context, commit string, paths []string) ([][]byte, error)
	RuntimeArchive(id string) (*confgit.Archive, error)
}

func (s *Server) history() (ConfigHistory, bool) {
	h, ok := s.Config.(ConfigHistory)
	return h, ok
}

// scraperFor builds the offer of scraper job j. Its spec, runtime and
// files all come from the commit recorded on the job, so that they agree
// with each other whatever CONFGIT holds now. No database session is held:
// this reads from git.
func (s *Server) scraperFor(ctx context.Context, j statedb.Job, text string) (*wire.Scraper, error) {
	if j.Text != "" {
		text = j.Text
	}
	if j.CommitID == "" || j.Runtime.ID == "" {
		return nil, errors.New("the job has no CONFGIT commit or runtime recorded; read the configuration again")
	}
	spec, err := confgit.DecodeScraper(text)
	if err != nil {
		return nil, fmt.Errorf("scraper spec: %w", err)
	}
	hist, ok := s.history()
	if !ok {
		return nil, errors.New("the WEBAPP cannot read the history of CONFGIT")
	}
	contents, err := hist.ReadFiles(ctx, j.CommitID, spec.Config)
	if err != nil {
		return nil, err
	}
	o := &wire.Scraper{
		Runtime: wire.Runtime{Name: j.Runtime.Name, Version: j.Runtime.Version, ID: j.Runtime.ID, Python: j.Runtime.Python},
		Argv:    spec.Argv(), Env: spec.Env, Config: []wire.ConfigFile{}, FDArgs: spec.FDArgs,
	}
	if o.Env == nil {
		o.Env = map[string]string{}
	}
	for i, p := range spec.Config {
		o.Config = append(o.Config, wire.ConfigFile{Name: path.Base(p), Path: p, Content: contents[i]})
	}
	return o, nil
}

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
	var st statedb.ConfigState
	err := s.DB.View(r.Context(), func(tx *statedb.Tx) error {
		var err error
		st, err = tx.ConfigState(r.Context())
		return err
	})
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
	hist, ok := s.history()
	if !ok {
		return notFound
	}
	// A tree id alone would serve any directory of CONFGIT that looks like
	// a runtime under any name: the name must be the one the id was
	// configured or handed out with.
	err = s.DB.View(r.Context(), func(tx *statedb.Tx) error {
		var err error
		ok, err = tx.RuntimeIs(r.Context(), name, id)
		return err
	})
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
