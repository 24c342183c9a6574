package routes

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The seeds of the fuzz targets are in testdata/fuzz/<target>; go test
// runs them as tests.

// maxFuzzInput bounds the bodies of FuzzReadParams: what it looks for
// shows in small bodies, and reading parameters takes time and memory in
// proportion to the body, not beyond.
const maxFuzzInput = 16 << 10

// FuzzReadParams: no body, of any content type, panics or fails with
// anything but a 400, or a 415 for a type that is neither a form nor
// JSON; the parameters read are never larger than the
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
			if !errors.As(err, &he) || he.code != http.StatusBadRequest && he.code != http.StatusUnsupportedMediaType {
				t.Fatalf("error %v (%T); want a 400, or a 415", err, err)
			}
			if read, typeErr := bodyType(r, formType); he.code == http.StatusUnsupportedMediaType && typeErr == nil {
				t.Fatalf("415 %v for type %q, read as JSON %v", err, contentType, read)
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

// FuzzParseBearer: no header panics; a token read is never empty, never
// longer than the header or the limit, holds no space, and reads back the
// same from the canonical header.
func FuzzParseBearer(f *testing.F) {
	f.Fuzz(func(t *testing.T, header string) {
		if len(header) > maxFuzzInput {
			t.Skip()
		}
		token, ok := parseBearer(header)
		if !ok {
			if token != "" {
				t.Errorf("parseBearer(%q) = %q, false; want no token when not ok", header, token)
			}
			return
		}
		if token == "" || len(token) > len(header) || len(token) > maxTokenLength || strings.ContainsAny(token, " \t\r\n") {
			t.Errorf("parseBearer(%q) = %q; want a non-empty token without spaces, no longer than the header", header, token)
		}
		if again, ok := parseBearer("Bearer " + token); !ok || again != token {
			t.Errorf("parseBearer(\"Bearer %s\") = %q, %v; want the same token", token, again, ok)
		}
	})
}

func TestParseBearer(t *testing.T) {
	tests := []struct {
		name, header, want string
		ok                 bool
	}{
		{name: "bearer", header: "Bearer lct_abc", want: "lct_abc", ok: true},
		{name: "any case", header: "bearer lct_abc", want: "lct_abc", ok: true},
		{name: "spaces around", header: "Bearer   lct_abc  ", want: "lct_abc", ok: true},
		{name: "basic", header: "Basic dXNlcjpwYXNz"},
		{name: "no token", header: "Bearer "},
		{name: "no space", header: "Bearerlct_abc"},
		{name: "two words", header: "Bearer lct_abc def"},
		{name: "control", header: "Bearer lct\x01abc"},
		{name: "too long", header: "Bearer " + strings.Repeat("a", maxTokenLength+1)},
	}
	for _, tc := range tests {
		got, ok := parseBearer(tc.header)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: parseBearer(%q) = %q, %v; want %q, %v", tc.name, tc.header, got, ok, tc.want, tc.ok)
		}
	}
}
