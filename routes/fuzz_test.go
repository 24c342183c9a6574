package routes

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

// The seeds of the fuzz targets are in testdata/fuzz/<target>; go test
// runs them as tests.

// maxFuzzInput bounds the bodies of FuzzReadParams: what it looks for
// shows in small bodies, and reading parameters takes time and memory in
// proportion to the body, not beyond.
const maxFuzzInput = 16 << 10

// FuzzReadParams: no body, of any content type, panics or fails with
// anything but a 400; the parameters read are never larger than the
// request that carried them.
func FuzzReadParams(f *testing.F) {
	const query = "job_id=1&minion=m"
	f.Fuzz(func(t *testing.T, body []byte, contentType string) {
		if len(body) > maxFuzzInput || len(contentType) > 1024 {
			t.Skip()
		}
		r := httptest.NewRequest(http.MethodPost, "/1.0/job-update?"+query, bytes.NewReader(body))
		r.Header.Set("Content-Type", contentType)
		p, err := (&Server{}).readParams(r)
		if err != nil {
			var he *httpError
			if !errors.As(err, &he) || he.code != http.StatusBadRequest {
				t.Fatalf("error %v (%T); want a 400", err, err)
			}
			return
		}
		size := 0
		for k, v := range p {
			size += len(k) + len(v)
		}
		if size > len(body)+len(query) {
			t.Errorf("parameters of %d bytes from a body of %d and a query of %d", size, len(body), len(query))
		}
	})
}
