package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestCall(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path+" "+r.Form.Encode())
		mu.Unlock()
		switch r.URL.Path {
		case "/1.0/read-configuration":
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error": "lorry-controller.conf: bad JSON"}`)
		default:
			io.WriteString(w, `{"removed": 3}`)
		}
	}))
	defer srv.Close()
	conf := filepath.Join(t.TempDir(), "webapp.conf")
	if err := os.WriteFile(conf, []byte("listen = "+strings.TrimPrefix(srv.URL, "http://")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantReq    string
		wantOut    string
		wantStderr string
	}{
		{name: "post with parameters", args: []string{"--url", srv.URL, "POST", "/1.0/remove-old-jobs", "max_age=60"},
			wantReq: "POST /1.0/remove-old-jobs max_age=60", wantOut: `{"removed": 3}`},
		{name: "address from the configuration file", args: []string{"--config", conf, "get", "1.0/status"},
			wantReq: "GET /1.0/status ", wantOut: `{"removed": 3}`},
		{name: "quiet", args: []string{"--quiet", "--config", conf, "POST", "/1.0/remove-ghost-jobs"},
			wantReq: "POST /1.0/remove-ghost-jobs "},
		{name: "error answer", args: []string{"--quiet", "--url", srv.URL, "POST", "/1.0/read-configuration"}, wantCode: 1,
			wantReq: "POST /1.0/read-configuration ", wantStderr: "400 Bad Request: {\"error\": \"lorry-controller.conf: bad JSON\"}"},
		{name: "no path", args: []string{"--url", srv.URL, "GET"}, wantCode: 2, wantStderr: "Usage:"},
		{name: "bad parameter", args: []string{"--url", srv.URL, "POST", "/x", "novalue"}, wantCode: 2, wantStderr: `"novalue": want key=value`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			got = nil
			mu.Unlock()
			var stdout, stderr bytes.Buffer
			code := callMain(tc.args, &stdout, &stderr)
			if code != tc.wantCode {
				t.Errorf("exit code %d; want %d (stderr %q)", code, tc.wantCode, stderr.String())
			}
			mu.Lock()
			reqs := got
			mu.Unlock()
			if tc.wantReq == "" && len(reqs) > 0 || tc.wantReq != "" && (len(reqs) != 1 || reqs[0] != tc.wantReq) {
				t.Errorf("requests %q; want %q", reqs, tc.wantReq)
			}
			if stdout.String() != tc.wantOut {
				t.Errorf("stdout %q; want %q", stdout.String(), tc.wantOut)
			}
			if !strings.Contains(stderr.String(), tc.wantStderr) {
				t.Errorf("stderr %q; want it to contain %q", stderr.String(), tc.wantStderr)
			}
		})
	}
}

func TestURLOf(t *testing.T) {
	tests := []struct {
		listen, want, wantErr string
	}{
		{listen: "127.0.0.1:12765", want: "http://127.0.0.1:12765"},
		{listen: "0.0.0.0:8080", want: "http://127.0.0.1:8080"},
		{listen: ":8080", want: "http://127.0.0.1:8080"},
		{listen: "[::]:8080", want: "http://[::1]:8080"},
		{listen: "lorry.example.org:80", want: "http://lorry.example.org:80"},
		{listen: "127.0.0.1:0", wantErr: "give --url"},
		{listen: "nonsense", wantErr: "missing port"},
	}
	for _, tc := range tests {
		got, err := urlOf(tc.listen)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("urlOf(%q) = %q, %v; want an error containing %q", tc.listen, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("urlOf(%q) = %q, %v; want %q", tc.listen, got, err, tc.want)
		}
	}
}
