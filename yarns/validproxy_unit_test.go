package yarns

import (
	"bytes"
	"compress/gzip"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"lorrycontroller.dev/lc/openapitest"
)

// TestValidProxy feeds the validating proxy answers from a stand-in for
// the WEBAPP, right and wrong, and checks that it reports exactly the
// wrong ones, naming the route, the status and the validators' words, and
// passes every answer on as it was.
func TestValidProxy(t *testing.T) {
	doc, err := openapitest.Load()
	if err != nil {
		t.Fatal(err)
	}
	type answer struct {
		status int
		ctype  string
		body   string
		gzip   bool
	}
	for _, tc := range []struct {
		name         string
		method, path string
		form         url.Values
		answer       answer
		// want are the words of the report, each in it; none for no
		// report.
		want []string
	}{
		{name: "right", method: "GET", path: "/1.0/list-queue",
			answer: answer{200, "application/json", `{"queue":["a/b"]}`, false}},
		{name: "wrong type in a field", method: "GET", path: "/1.0/list-queue",
			answer: answer{200, "application/json", `{"queue":5}`, false},
			want:   []string{"GET /1.0/list-queue", "answered 200", "kin-openapi", "libopenapi-validator"}},
		{name: "field the document lacks", method: "GET", path: "/1.0/get-max-jobs",
			answer: answer{200, "application/json", `{"max_jobs":null,"extra":1}`, false},
			want:   []string{"GET /1.0/get-max-jobs", "extra"}},
		{name: "status the document lacks", method: "GET", path: "/1.0/list-queue",
			answer: answer{302, "application/json", `{"queue":[]}`, false},
			want:   []string{"answered 302"}},
		{name: "wrong content type", method: "GET", path: "/1.0/list-queue",
			answer: answer{200, "text/plain", `{"queue":[]}`, false},
			want:   []string{"answered 200", "text/plain"}},
		{name: "error object", method: "GET", path: "/1.0/job/7",
			answer: answer{404, "application/json", `{"error":"no job 7"}`, false}},
		{name: "error not the object", method: "GET", path: "/1.0/job/7",
			answer: answer{404, "application/json", `{"message":"no job 7"}`, false},
			want:   []string{"GET /1.0/job/{id}", "answered 404"}},
		{name: "no route, error object", method: "GET", path: "/1.0/nothing-here",
			answer: answer{404, "application/json", `{"error":"not found"}`, false}},
		{name: "no route, a page", method: "GET", path: "/1.0/nothing-here",
			answer: answer{404, "text/html", `<p>no</p>`, false},
			want:   []string{"no route of the document", "answered 404"}},
		{name: "no route, answered 200", method: "GET", path: "/1.0/nothing-here",
			answer: answer{200, "application/json", `{}`, false},
			want:   []string{"not in the document"}},
		{name: "lorry path unescaped", method: "GET", path: "/1.0/lorry/delta/foo/bar",
			answer: answer{404, "application/json", `{"error":"no lorry"}`, false}},
		{name: "lorry path escaped", method: "GET", path: "/1.0/lorry/delta%2Ffoo%2Fbar",
			answer: answer{404, "application/json", `{"error":"no lorry"}`, false}},
		{name: "request the document does not take, taken", method: "POST", path: "/1.0/set-max-jobs",
			form:   url.Values{"max_jobs": {"many"}},
			answer: answer{200, "application/json", `{"max_jobs":5}`, false},
			want:   []string{"POST /1.0/set-max-jobs", "answered 200", "does not take the request", "max_jobs"}},
		{name: "request the document does not take, refused", method: "POST", path: "/1.0/set-max-jobs",
			form:   url.Values{"max_jobs": {"many"}},
			answer: answer{400, "application/json", `{"error":"max_jobs: not a number"}`, false}},
		{name: "request taken", method: "POST", path: "/1.0/set-max-jobs",
			form:   url.Values{"max_jobs": {"5"}},
			answer: answer{200, "application/json", `{"max_jobs":5}`, false}},
		{name: "page gzipped", method: "GET", path: "/1.0/status-html",
			answer: answer{200, "text/html; charset=utf-8", `<!doctype html><p>ok</p>`, true}},
		{name: "JSON gzipped and wrong", method: "GET", path: "/1.0/list-queue",
			answer: answer{200, "application/json", `{"queue":"a"}`, true},
			want:   []string{"GET /1.0/list-queue", "answered 200"}},
		{name: "over the bound, passed on whole and unchecked", method: "GET", path: "/1.0/list-queue",
			answer: answer{200, "application/json", `{"queue":"` + strings.Repeat("é", maxChecked) + `"}`, false}},
		{name: "not the API", method: "GET", path: "/static/style.css",
			answer: answer{200, "text/css", `p{}`, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body bytes.Buffer
			if tc.answer.gzip {
				zw := gzip.NewWriter(&body)
				zw.Write([]byte(tc.answer.body))
				zw.Close()
			} else {
				body.WriteString(tc.answer.body)
			}
			upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tc.answer.ctype)
				if tc.answer.gzip {
					w.Header().Set("Content-Encoding", "gzip")
				}
				w.WriteHeader(tc.answer.status)
				w.Write(body.Bytes())
			}))
			defer upstream.Close()
			target, _ := url.Parse(upstream.URL)
			var mu sync.Mutex
			var reports []string
			p := newValidProxy(doc, target, upstream.Client().Transport, func(msg string) {
				mu.Lock()
				reports = append(reports, msg)
				mu.Unlock()
			})
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			stop := serveValidProxy(p, ln)
			defer stop()

			var reqBody io.Reader
			if tc.form != nil {
				reqBody = strings.NewReader(tc.form.Encode())
			}
			req, err := http.NewRequest(tc.method, "http://"+ln.Addr().String()+tc.path, reqBody)
			if err != nil {
				t.Fatal(err)
			}
			if tc.form != nil {
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			}
			if tc.answer.gzip {
				req.Header.Set("Accept-Encoding", "gzip")
			}
			resp, err := http.DefaultTransport.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.answer.status || !bytes.Equal(got, body.Bytes()) {
				t.Errorf("the client got %d %.100q (%d bytes); want the WEBAPP's %d %.100q (%d bytes)",
					resp.StatusCode, got, len(got), tc.answer.status, body.Bytes(), body.Len())
			}
			stop()
			mu.Lock()
			defer mu.Unlock()
			switch {
			case len(tc.want) == 0 && len(reports) > 0:
				t.Errorf("reported %q; want nothing", reports)
			case len(tc.want) > 0 && len(reports) != 1:
				t.Errorf("reported %q; want one report", reports)
			case len(tc.want) > 0:
				for _, w := range tc.want {
					if !strings.Contains(reports[0], w) {
						t.Errorf("report %q does not say %q", reports[0], w)
					}
				}
			}
		})
	}
}

// TestValidProxyWebappDown: to a client of the proxy, a WEBAPP that is
// not there is a broken connection, not an answer.
func TestValidProxyWebappDown(t *testing.T) {
	doc, err := openapitest.Load()
	if err != nil {
		t.Fatal(err)
	}
	gone, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	target := &url.URL{Scheme: "http", Host: gone.Addr().String()}
	gone.Close()
	p := newValidProxy(doc, target, http.DefaultTransport, func(msg string) { t.Errorf("reported %q", msg) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stop := serveValidProxy(p, ln)
	defer stop()
	resp, err := http.Get("http://" + ln.Addr().String() + "/1.0/health-check")
	if err == nil {
		resp.Body.Close()
		t.Fatalf("GET through the proxy to no WEBAPP = %d; want a broken connection", resp.StatusCode)
	}
}
