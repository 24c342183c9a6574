package yarns

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"

	"lorrycontroller.dev/lc/openapitest"
)

// The scenarios' clients and minions talk to the WEBAPP through a
// validating proxy, which checks every request and answer under /1.0
// against docs/openapi.yaml with both of openapitest's validators: what
// the scenarios do with the real WEBAPP, the document must describe.

// maxChecked bounds the bodies the proxy checks. Only a job's output
// grows past it, which the validators would take seconds to read each
// time a scenario polls it (the routes' tests check its shape); such an
// exchange is passed on unchecked, and the proxy holds no more of it.
const maxChecked = 1 << 20

// validProxy is a reverse proxy to one WEBAPP process that reports each
// answer the document does not allow, and each request it does not take
// that the WEBAPP took.
type validProxy struct {
	doc    *openapitest.Doc
	rp     *httputil.ReverseProxy
	report func(string)
	// wg counts the requests being served, so that none reports after
	// the proxy was closed.
	wg sync.WaitGroup
}

func newValidProxy(doc *openapitest.Doc, target *url.URL, transport http.RoundTripper, report func(string)) *validProxy {
	p := &validProxy{doc: doc, report: report}
	p.rp = &httputil.ReverseProxy{
		// The WEBAPP sees the request as the client made it, Host and
		// all (a button's Origin is compared with it), and no
		// X-Forwarded-* header: to it, the proxy is the client.
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host
		},
		Transport:      transport,
		ModifyResponse: p.check,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			// A WEBAPP that is not there is, to its client, a broken
			// connection, not an answer of the proxy's.
			panic(http.ErrAbortHandler)
		},
	}
	return p
}

// checked is what the proxy keeps of a request to check its answer.
type checked struct {
	path   string
	params map[string]string
	body   []byte
}

type checkedKey struct{}

func (p *validProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.wg.Add(1)
	defer p.wg.Done()
	if !strings.HasPrefix(r.URL.Path, "/1.0/") {
		p.rp.ServeHTTP(w, r)
		return
	}
	c := &checked{}
	c.path, c.params = p.doc.Find(r.URL.EscapedPath())
	if r.Body != nil && r.Body != http.NoBody {
		// A body the WEBAPP refuses as too large is passed on whole,
		// for it to refuse.
		body, err := io.ReadAll(io.LimitReader(r.Body, maxChecked+1))
		if err != nil {
			panic(http.ErrAbortHandler)
		}
		c.body = body
		r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), r.Body))
	}
	p.rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), checkedKey{}, c)))
}

// check checks an answer, and the request it answers, before it is passed
// on. The body is read whole, up to maxChecked, and passed on as read.
func (p *validProxy) check(resp *http.Response) error {
	r := resp.Request
	c, _ := r.Context().Value(checkedKey{}).(*checked)
	if c == nil {
		return nil
	}
	held, err := io.ReadAll(io.LimitReader(resp.Body, maxChecked+1))
	if err != nil {
		return err
	}
	resp.Body = readCloser{io.MultiReader(bytes.NewReader(held), resp.Body), resp.Body}
	if len(held) > maxChecked || len(c.body) > maxChecked {
		return nil
	}
	body := held
	if resp.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(held))
		if err == nil {
			body, err = io.ReadAll(io.LimitReader(zr, maxChecked+1))
		}
		if len(body) > maxChecked {
			return nil
		}
		if err != nil {
			p.mismatch(r, resp.StatusCode, fmt.Errorf("a gzipped answer that does not decompress: %v", err), held)
			return nil
		}
	}
	a := openapitest.Answer{Status: resp.StatusCode, Header: resp.Header, Body: body}
	if err := p.doc.CheckAnswer(r, c.path, c.params, a); err != nil {
		p.mismatch(r, resp.StatusCode, err, body)
	}
	// What the WEBAPP takes, the document must take; what it refuses
	// may be wrong in any way.
	if c.path != "" && resp.StatusCode < 400 {
		if err := p.doc.CheckRequest(r, c.body, c.path, c.params); err != nil {
			p.report(fmt.Sprintf("%s %s was answered %d, but docs/openapi.yaml does not take the request: %v\nrequest body: %.500s",
				r.Method, r.URL.RequestURI(), resp.StatusCode, err, c.body))
		}
	}
	return nil
}

func (p *validProxy) mismatch(r *http.Request, status int, err error, body []byte) {
	route := "no route of the document"
	if c, _ := r.Context().Value(checkedKey{}).(*checked); c != nil && c.path != "" {
		route = r.Method + " " + c.path
	}
	p.report(fmt.Sprintf("%s %s (%s) answered %d, which docs/openapi.yaml does not allow: %v\nbody: %.500s",
		r.Method, r.URL.RequestURI(), route, status, err, body))
}

// readCloser reads from one reader and closes another.
type readCloser struct {
	io.Reader
	io.Closer
}

// serveValidProxy serves p on ln until the returned function is called,
// which closes every connection and waits for the requests being served.
func serveValidProxy(p *validProxy, ln net.Listener) (stop func()) {
	srv := &http.Server{Handler: p}
	done := make(chan struct{})
	go func() {
		srv.Serve(ln)
		close(done)
	}()
	return func() {
		srv.Close()
		<-done
		p.wg.Wait()
	}
}
