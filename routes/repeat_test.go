package routes

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"lorrycontroller.dev/lc/redact"
)

// TestRedactorStored checks, at every byte of output with credentials,
// where the output stored from a report sent again starts: right there,
// or, inside a line whose credentials were hidden, at the start of that
// line, so that nothing after it is lost and no credential is shown.
func TestRedactorStored(t *testing.T) {
	text := "first line\nclone https://user:secret@git.example/x.git failed\nmiddle\n" +
		"two https://a:b@h/x and https://c:d@h/y\nlast, no newline"
	for _, size := range []int{1, 7, len(text)} {
		var out bytes.Buffer
		r := &redactor{w: &out}
		for p := text; p != ""; {
			n := min(size, len(p))
			if _, err := r.Write([]byte(p[:n])); err != nil {
				t.Fatal(err)
			}
			p = p[n:]
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if r.in != int64(len(text)) || r.out != int64(out.Len()) {
			t.Fatalf("writes of %d: counted %d in and %d out; want %d and %d", size, r.in, r.out, len(text), out.Len())
		}
		for k := 0; k <= len(text); k++ {
			from := k
			if start := strings.LastIndexAny(text[:k], "\n") + 1; k > start {
				end := strings.IndexAny(text[k:], "\n")
				if end < 0 {
					end = len(text) - k
				}
				if line := text[start : k+end]; redact.URLs(line) != line {
					from = start
				}
			}
			s := r.stored(int64(k))
			if got, want := out.String()[s:], redact.URLs(text[from:]); got != want {
				t.Errorf("writes of %d: sent %d: stored from %d: %q; want %q", size, k, s, got, want)
			}
		}
	}
}

// TestJobUpdateOffsets sends a report whose output starts past what the
// WEBAPP has, which is answered 416 with what it has, and then a report
// twice, as after a lost answer: its output is stored once.
func TestJobUpdateOffsets(t *testing.T) {
	ts := newTestServer(t)
	ts.configure(t, "a/b")
	code, offer := ts.call(t, "POST", "/1.0/give-me-job", url.Values{"host": {"h"}, "pid": {"1"}, "minion": {"m"}})
	if code != 200 {
		t.Fatalf("give-me-job = %d %v", code, offer)
	}
	id := fmt.Sprint(offer["job_id"])
	form := "application/x-www-form-urlencoded"
	update := func(stdout string, stdoutOffset int) (int, string) {
		return post(t, ts.url+"/1.0/job-update", form, []byte(url.Values{"job_id": {id}, "minion": {"m"}, "pid": {"1"},
			"exit": {"no"}, "stdout": {stdout}, "stderr": {""}, "stdout_offset": {fmt.Sprint(stdoutOffset)},
			"stderr_offset": {"0"}}.Encode()), false)
	}
	code, answer := update("later\n", 10)
	var gap struct {
		Error        string `json:"error"`
		StdoutOffset *int64 `json:"stdout_offset"`
		StderrOffset *int64 `json:"stderr_offset"`
	}
	if err := json.Unmarshal([]byte(answer), &gap); code != http.StatusRequestedRangeNotSatisfiable || err != nil ||
		gap.Error == "" || gap.StdoutOffset == nil || *gap.StdoutOffset != 0 || gap.StderrOffset == nil || *gap.StderrOffset != 0 {
		t.Fatalf("report past a gap: %d %s; want 416 with stdout_offset 0 and stderr_offset 0", code, answer)
	}
	// A credential, hidden, makes what is stored shorter than what was
	// sent: offsets count what was sent.
	first := "https://user:secret@git.example/x.git\n"
	for i, stdout := range []string{first, first, first + "next\n"} {
		if code, answer := update(stdout, 0); code != 200 {
			t.Fatalf("report %d: %d %s", i, code, answer)
		}
	}
	var j struct {
		Output string `json:"output"`
	}
	getJSON(t, ts.url+"/1.0/job/"+id, &j)
	if want := redact.URLs(first) + "next\n"; j.Output != want {
		t.Errorf("output %q; want %q", j.Output, want)
	}
}
