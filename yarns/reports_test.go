package yarns

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// answerDropper is a proxy in front of a WEBAPP that loses the answer of
// every third job-update, and of the first final report of each job: it
// forwards the request, reads the WEBAPP's whole answer, so that the
// WEBAPP has acted on it, and closes the minion's connection without a
// word.
type answerDropper struct {
	target string
	client *http.Client

	mu      sync.Mutex
	updates int
	dropped int
	// finals are the jobs whose final report was seen, and finalsDropped
	// how many of their answers were lost.
	finals        map[string]bool
	finalsDropped int
}

func (d *answerDropper) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, d.target+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req.Header = r.Header.Clone()
	resp, err := d.client.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	answer, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if r.URL.Path == "/1.0/job-update" {
		form, _ := url.ParseQuery(string(body))
		d.mu.Lock()
		d.updates++
		drop := d.updates%3 == 0
		if id := form.Get("job_id"); form.Get("exit") != "no" && !d.finals[id] {
			d.finals[id] = true
			drop = true
			d.finalsDropped++
		}
		if drop {
			d.dropped++
		}
		d.mu.Unlock()
		if drop {
			c, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				c.Close()
			}
			return
		}
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(answer)
}

// numberedLorry is a lorry that prints lines numbered 1 to 120, a few
// at a time, so that its output spans several updates.
const numberedLorry = `#!/bin/sh
i=1
while [ $i -le 120 ]; do
  echo "line $i of the job"
  [ $((i % 10)) -eq 0 ] && sleep 0.05
  i=$((i+1))
done
echo "an error line" >&2
`

var numberedLine = regexp.MustCompile(`(?m)^line ([0-9]+) of the job$`)

// TestReportsSafeToRepeat runs jobs that print numbered lines through a
// proxy that loses every third answer to a job-update after the WEBAPP
// acted on it: the minion sends the report again, and the WEBAPP must
// store every line once, in order, and end each job once, as it
// reported.
func TestReportsSafeToRepeat(t *testing.T) {
	const jobs = 12
	var spec strings.Builder
	spec.WriteString("{")
	for i := range jobs {
		if i > 0 {
			spec.WriteString(", ")
		}
		fmt.Fprintf(&spec, `"p%02d": {"type": "git", "url": "https://example.invalid/p%02d.git"}`, i, i)
	}
	spec.WriteString("}")
	r := newRig(t, map[string]string{
		"lorry-controller.conf": `[{"type": "lorries", "prefix": "upstream", "globs": ["*.lorry"], "interval": "1d"}]`,
		"all.lorry":             spec.String(),
	})
	defer func() {
		if t.Failed() {
			r.showLogs()
		}
	}()
	lorry := filepath.Join(r.work, "numbered-lorry")
	if err := os.WriteFile(lorry, []byte(numberedLorry), 0o755); err != nil {
		t.Fatal(err)
	}
	d := &answerDropper{target: r.url, client: &http.Client{Timeout: time.Minute}, finals: map[string]bool{}}
	proxy := httptest.NewServer(d)
	defer proxy.Close()
	r.start(filepath.Join(r.work, "minion-m1.log"), minionBin, "--webapp-url", proxy.URL, "--name", "m1",
		"--sleep", "20ms", "--update-interval", "100ms", "--lorry-cmd", lorry,
		"--working-area", filepath.Join(r.work, "minion-m1"))

	for id := 1; id <= jobs; id++ {
		j := r.finished(id, 3*time.Minute)
		if j.Status != "succeeded" || *j.Exit != 0 {
			t.Errorf("job %d: %s, exit %d, want succeeded, exit 0", id, j.Status, *j.Exit)
		}
		var got []int
		for _, m := range numberedLine.FindAllStringSubmatch(j.Output, -1) {
			n, _ := strconv.Atoi(m[1])
			got = append(got, n)
		}
		bad := len(got) != 120
		for i, n := range got {
			if n != i+1 {
				bad = true
			}
		}
		if bad {
			t.Errorf("job %d: stored lines %v, want 1 to 120 once each, in order", id, got)
		}
		if n := strings.Count(j.Output, "an error line\n"); n != 1 {
			t.Errorf("job %d: its line of stderr stored %d times, want once", id, n)
		}
	}
	log, err := os.ReadFile(filepath.Join(r.work, "minion-m1.log"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(log, []byte("refused")) {
		t.Errorf("the minion was refused a report, want every repeated report answered as the first was:\n%s", log)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dropped-d.finalsDropped < jobs || d.finalsDropped != jobs {
		t.Errorf("%d answers dropped, %d of final reports; want at least one a job (%d) besides the first final report's",
			d.dropped, d.finalsDropped, jobs)
	}
	t.Logf("%d job-updates, %d answers dropped, %d of them of final reports", d.updates, d.dropped, d.finalsDropped)
}
