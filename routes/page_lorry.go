package routes

import (
	"bytes"
	"encoding/json"
	"html/template"
	"net/http"
	"net/url"
	"strings"
)

// recentJobs is how many of its jobs a lorry's page lists.
const recentJobs = 20

type lorryPageView struct {
	pageBase
	Lorry  lorryView
	Pos    int64
	Total  int64
	Spec   string
	Recent jobTable
	// LastBuild says how the newest job got a scraper's runtime ready.
	LastBuild string
	// Runs is the chart of the lorry's last runs; "" when it has none.
	Runs template.HTML
}

// lorryPath is the lorry path of a URL that ends in one, after prefix. It
// is read from the escaped path and unescaped once, so that its slashes
// may come as they are or as %2F, as a client that escapes a path
// parameter sends them, and a path holding "%" or "#" arrives as it was.
// The router's wildcard is not used: it holds the path unescaped or not,
// depending on whether the URL had an escaped slash.
func lorryPath(r *http.Request, prefix string) (string, error) {
	raw, ok := strings.CutPrefix(r.URL.EscapedPath(), prefix)
	if !ok {
		return "", errorf(http.StatusBadRequest, "no lorry path given")
	}
	p, err := url.PathUnescape(raw)
	if err != nil {
		return "", errorf(http.StatusBadRequest, "lorry path %q is not escaped right", raw)
	}
	p = strings.Trim(p, "/")
	if p == "" {
		return "", errorf(http.StatusBadRequest, "no lorry path given")
	}
	return p, nil
}

func (s *Server) lorryHTML(w http.ResponseWriter, r *http.Request) error {
	path, err := lorryPath(r, "/1.0/lorry-html/")
	if err != nil {
		return err
	}
	var v lorryPageView
	p, err := s.LorryPage(r.Context(), path, recentJobs, stripRuns)
	if err != nil {
		return err
	}
	v.Now, v.Pos, v.Total = p.Now, p.Pos, p.Total
	v.Lorry = lorryRow(p.Lorry, p.Now, 0)
	v.Recent.Now = p.Now
	for _, j := range p.Jobs {
		v.Recent.Jobs = append(v.Recent.Jobs, jobRow(j, p.Now))
	}
	if len(p.Runs) > 0 {
		v.Runs = runStrip(path, p.Runs, v.Now, hardFailAfter(p.Lorry))
	}
	v.pageBase = livePage(w, r, v.Lorry.Path, "status", v.Now)
	v.Spec = readableSpec(v.Lorry.Text)
	v.LastBuild = "no job yet"
	if len(v.Recent.Jobs) > 0 && v.Recent.Jobs[0].Runtime != nil {
		v.LastBuild = v.Recent.Jobs[0].RuntimeText
	}
	return writePage(w, http.StatusOK, "lorry.html", v)
}

// readableSpec lays out the spec as the API shows it (secrets hidden) to
// be read: indented, and with <, > and & as themselves rather than the
// \u003c that JSON encoders write; the page escapes them.
func readableSpec(text string) string {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var spec any
	if err := dec.Decode(&spec); err != nil {
		return text
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(spec); err != nil {
		return text
	}
	return strings.TrimSuffix(b.String(), "\n")
}
