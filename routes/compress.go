package routes

import (
	"compress/gzip"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// The pages, their style sheet and their script go gzip-compressed to a
// browser that accepts it: a status page of thousands of lorries is a
// tenth of its size so. The API, /metrics and the runtimes' tarballs are
// sent as they are, as their clients (curl, Prometheus, minions) expect.

// gzipPool keeps the compressors between answers: each holds some hundred
// kilobytes of tables.
var gzipPool = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(nil, gzip.DefaultCompression)
	return w
}}

// compressedTypes are the content types that gzipped compresses.
var compressedTypes = []string{"text/html", "text/css", "text/javascript"}

// gzipped answers with h, compressed if the client accepts gzip. The answer
// varies with Accept-Encoding whether compressed or not, so a cache in
// between keeps one copy of each.
func gzipped(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("Vary", "Accept-Encoding")
		if !acceptsGzip(r.Header.Get("Accept-Encoding")) {
			h(w, r)
			return
		}
		// A range is of the representation sent, here the compressed
		// one: the whole is sent rather than a range of the other.
		if r.Header.Get("Range") != "" {
			r = r.Clone(r.Context())
			r.Header.Del("Range")
		}
		gw := &gzipWriter{ResponseWriter: w}
		defer gw.close()
		h(gw, r)
	}
}

// acceptsGzip reads an Accept-Encoding header (RFC 9110, 12.5.3): gzip
// or "*" with a weight above zero.
func acceptsGzip(header string) bool {
	ok := false
	for _, part := range strings.Split(header, ",") {
		name, params, _ := strings.Cut(part, ";")
		name = strings.ToLower(strings.TrimSpace(name))
		if name != "gzip" && name != "x-gzip" && name != "*" {
			continue
		}
		weight := 1.0
		for _, p := range strings.Split(params, ";") {
			k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
			if strings.EqualFold(k, "q") {
				if q, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
					weight = q
				}
			}
		}
		if name == "*" {
			// "*" speaks for gzip only if gzip is not named itself.
			ok = ok || weight > 0 && !strings.Contains(strings.ToLower(header), "gzip")
			continue
		}
		return weight > 0
	}
	return ok
}

// gzipWriter compresses what is written through it once its header says
// that the answer is of a type worth it and has a body.
type gzipWriter struct {
	http.ResponseWriter
	gz      *gzip.Writer
	decided bool
}

func (g *gzipWriter) WriteHeader(code int) {
	if !g.decided {
		g.decided = true
		h := g.Header()
		ctype, _, _ := strings.Cut(h.Get("Content-Type"), ";")
		if code >= 200 && code != http.StatusNoContent && code != http.StatusNotModified &&
			h.Get("Content-Encoding") == "" && compressible(strings.TrimSpace(ctype)) {
			h.Set("Content-Encoding", "gzip")
			// The length is of the compressed body, not known yet.
			h.Del("Content-Length")
			h.Del("Accept-Ranges")
			g.gz = gzipPool.Get().(*gzip.Writer)
			g.gz.Reset(g.ResponseWriter)
		}
	}
	g.ResponseWriter.WriteHeader(code)
}

func (g *gzipWriter) Write(p []byte) (int, error) {
	if !g.decided {
		g.WriteHeader(http.StatusOK)
	}
	if g.gz != nil {
		return g.gz.Write(p)
	}
	return g.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (g *gzipWriter) Unwrap() http.ResponseWriter { return g.ResponseWriter }

// close ends the compressed body and gives the compressor back.
func (g *gzipWriter) close() {
	if g.gz == nil {
		return
	}
	g.gz.Close()
	g.gz.Reset(nil)
	gzipPool.Put(g.gz)
	g.gz = nil
}

func compressible(ctype string) bool {
	for _, t := range compressedTypes {
		if strings.EqualFold(ctype, t) {
			return true
		}
	}
	return false
}
