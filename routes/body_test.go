package routes

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// post sends body to path as contentType, hiding its length if chunked,
// and returns the status code and the answer.
func post(t *testing.T, url, contentType string, body []byte, chunked bool) (int, string) {
	t.Helper()
	var r io.Reader = bytes.NewReader(body)
	if chunked {
		r = io.MultiReader(r) // no length known
	}
	req, _ := http.NewRequest("POST", url, r)
	req.Header.Set("Content-Type", contentType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestBodiesOverTheLimitAnswer413(t *testing.T) {
	ts := newTestServer(t)
	ts.configure(t, "a/b")
	huge := []byte("job_id=1&exit=no&stdout=" + strings.Repeat("x", maxBody))
	form := "application/x-www-form-urlencoded"
	tests := []struct {
		name    string
		path    string
		body    []byte
		chunked bool
	}{
		{name: "job-update", path: "/1.0/job-update", body: huge},
		{name: "job-update, length not said", path: "/1.0/job-update", body: huge, chunked: true},
		{name: "stop-job", path: "/1.0/stop-job", body: []byte("job_id=1&x=" + strings.Repeat("x", smallBody))},
		{name: "give-me-job, length not said", path: "/1.0/give-me-job",
			body: []byte("host=h&pid=1&x=" + strings.Repeat("x", smallBody)), chunked: true},
		{name: "stop-queue", path: "/1.0/stop-queue", body: []byte("x=" + strings.Repeat("x", smallBody))},
	}
	for _, tc := range tests {
		code, answer := post(t, ts.url+tc.path, form, tc.body, tc.chunked)
		var e struct{ Error string }
		if code != http.StatusRequestEntityTooLarge || json.Unmarshal([]byte(answer), &e) != nil || e.Error == "" {
			t.Errorf("%s: %d %.200s; want 413 with a JSON error", tc.name, code, answer)
		}
	}
	// Nothing of the refused bodies was acted on.
	if _, st := ts.call(t, "GET", "/1.0/status", nil); st["running_queue"] != true || len(st["running_jobs"].([]any)) != 0 {
		t.Errorf("status after refused bodies: queue running %v, jobs %v; want running and none", st["running_queue"], st["running_jobs"])
	}
}

func TestJobUpdateOutputStreamed(t *testing.T) {
	ts := newTestServer(t)
	ts.configure(t, "a/b")
	code, offer := ts.call(t, "POST", "/1.0/give-me-job", url.Values{"host": {"h"}, "pid": {"1"}, "minion": {"m"}})
	if code != 200 {
		t.Fatalf("give-me-job = %d %v", code, offer)
	}
	id := fmt.Sprint(offer["job_id"])
	head, tail := ts.DB.OutputCaps()

	// Output larger than the cap, with URLs with credentials at the start
	// and across the boundaries of the pieces it is read in.
	secret := "clone https://user:secret@git.example/x.git failed\n"
	var b bytes.Buffer
	b.WriteString(secret)
	for b.Len() < int(head+tail)+(3<<20) {
		fmt.Fprintf(&b, "line %08d of output\n", b.Len())
		if b.Len()%(32<<10) < 30 {
			b.WriteString(secret)
		}
	}
	b.WriteString(secret)
	stdout := b.String()
	stderr := "warning: é \"quoted\" \\ tab\t😀\n"
	want := strings.ReplaceAll(stdout, "user:secret@", "***@")

	jsonBody, _ := json.Marshal(map[string]any{"stdout": stdout, "job_id": json.Number(id), "exit": "no", "stderr": stderr,
		"minion": "m", "disk_usage": nil})
	for _, tc := range []struct {
		name, contentType string
		body              []byte
	}{
		// The output comes before job_id: it is spooled until the job is
		// known.
		{name: "form", contentType: "application/x-www-form-urlencoded",
			body: []byte("stdout=" + url.QueryEscape(stdout) + "&job_id=" + id + "&exit=no&stderr=" + url.QueryEscape(stderr) + "&minion=m")},
		{name: "JSON", contentType: "application/json", body: jsonBody},
	} {
		var before struct {
			OutputBytes int64 `json:"output_bytes"`
		}
		getJSON(t, ts.url+"/1.0/job/"+id, &before)
		if code, answer := post(t, ts.url+"/1.0/job-update", tc.contentType, tc.body, true); code != 200 {
			t.Fatalf("%s: job-update = %d %s", tc.name, code, answer)
		}
		var j struct {
			Output      string `json:"output"`
			OutputBytes int64  `json:"output_bytes"`
			CutBytes    int64  `json:"cut_bytes"`
		}
		getJSON(t, ts.url+"/1.0/job/"+id, &j)
		if got, want := j.OutputBytes-before.OutputBytes, int64(len(want)+len(stderr)); got != want {
			t.Errorf("%s: %d bytes of output received; want %d", tc.name, got, want)
		}
		if strings.Contains(j.Output, "secret") {
			t.Errorf("%s: output shows a credential", tc.name)
		}
		if !strings.HasSuffix(j.Output, want[len(want)-(1<<20):]+stderr) {
			t.Errorf("%s: output does not end with the end of stdout and then stderr", tc.name)
		}
		if !strings.HasPrefix(want, j.Output[:head]) && before.OutputBytes == 0 {
			t.Errorf("%s: output does not start with the start of stdout", tc.name)
		}
		if j.CutBytes == 0 {
			t.Errorf("%s: nothing cut from %d bytes of output", tc.name, j.OutputBytes)
		}
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
}

func TestDecodeBodies(t *testing.T) {
	tests := []struct {
		name, contentType, body string
		want                    params
		wantCode                int
	}{
		{name: "form", body: "a=1&b=x+y%21&c=&d&a=2", want: params{"a": "2", "b": "x y!", "c": "", "d": ""}},
		{name: "form, bad escape", body: "a=%zz", wantCode: 400},
		{name: "JSON", contentType: "application/json",
			body: ` {"a": 1, "b": "x\u00e9\ud83d\ude00\n", "c": true, "d": null, "e": -1.5e3} `,
			want: params{"a": "1", "b": "xé😀\n", "c": "true", "d": "", "e": "-1.5e3"}},
		{name: "JSON, empty", contentType: "application/json", body: "", want: params{}},
		{name: "JSON, nested", contentType: "application/json", body: `{"a": {"b": 1}}`, wantCode: 400},
		{name: "JSON, cut", contentType: "application/json", body: `{"a": "b`, wantCode: 400},
		{name: "JSON, trailing", contentType: "application/json", body: `{"a": "b"} x`, wantCode: 400},
		{name: "JSON, bad literal", contentType: "application/json", body: `{"a": nope}`, wantCode: 400},
	}
	s := &Server{}
	for _, tc := range tests {
		r, _ := http.NewRequest("POST", "/", strings.NewReader(tc.body))
		if tc.contentType != "" {
			r.Header.Set("Content-Type", tc.contentType)
		}
		p, err := s.readParams(r)
		var he *httpError
		switch {
		case tc.wantCode != 0:
			if err == nil || !errors.As(err, &he) || he.code != tc.wantCode {
				t.Errorf("%s: %v, %v; want %d", tc.name, p, err, tc.wantCode)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case fmt.Sprint(p) != fmt.Sprint(tc.want):
			t.Errorf("%s: got %v; want %v", tc.name, p, tc.want)
		}
	}
}

// TestSmallBodiesAllocateLittle reads job-protocol bodies of a few dozen
// bytes, as a form and as JSON: their buffers come from a pool, so that
// reading one allocates a small part of what the buffers hold (36 KiB).
func TestSmallBodiesAllocateLittle(t *testing.T) {
	s := &Server{}
	bodies := map[string]string{
		"application/x-www-form-urlencoded": "host=builder-1&pid=4242&minion=builder-1-3&queues=heavy%2Csmall&job_id=17&exit=0",
		"application/json":                  `{"host": "builder-1", "pid": 4242, "minion": "builder-1-3", "job_id": 17, "exit": 0}`,
	}
	// A collection empties the pool; the race detector drops a quarter of
	// what is put in one, so a buffer is made again for one read in four.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for ct, body := range bodies {
		read := func() {
			r := httptest.NewRequest("POST", "/1.0/give-me-job", strings.NewReader(body))
			r.Header.Set("Content-Type", ct)
			p, err := s.readParams(r)
			if err != nil || p["minion"] != "builder-1-3" {
				t.Fatalf("%s: %v %v", ct, p, err)
			}
		}
		const runs = 200
		read()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range runs {
			read()
		}
		runtime.ReadMemStats(&after)
		if per := (after.TotalAlloc - before.TotalAlloc) / runs; per > 24<<10 {
			t.Errorf("%s: reading a body of %d bytes allocated %d bytes; want at most 24 KiB", ct, len(body), per)
		}
	}
}
