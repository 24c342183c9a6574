package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"
)

const (
	anonymousClients = 60
	anonymousBody    = 9 << 20 // bytes of form each one posts
	// anonymousRSS is the most the WEBAPP may have resident under them.
	anonymousRSS = 150 << 20
)

// anonymousForms are what the clients post, none with a token: the
// sign-in, and a button's route, which refuses them with the sign-in
// page. Half say their length and half do not (chunked), as net/http
// reads a form of either up to 10 MiB on its own.
var anonymousForms = []struct {
	path, form string
	chunked    bool
}{
	{"/1.0/sign-in-html", "back=/1.0/status-html&token=", true},
	{"/1.0/stop-queue-html", "back=", false},
	{"/1.0/stop-queue-html", "back=", true},
	{"/1.0/sign-in-html", "back=/1.0/status-html&token=", false},
}

// TestAnonymousBodiesBoundedMemory has 60 clients without a token post
// 9 MiB forms at once to the real WEBAPP, which must stay under 150 MiB
// resident and keep answering its health check: no body is read but
// through the limits and the budget of bodies.
func TestAnonymousBodiesBoundedMemory(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc to read the WEBAPP's memory from")
	}
	bin, err := plainBin()
	if err != nil {
		t.Fatal(err)
	}
	w := startWebapp(t, t.TempDir(), startOpts{bin: bin, args: []string{"--listen", "127.0.0.1:0"}})
	rest := vmHWM(t, w.cmd.Process.Pid)
	filler := bytes.Repeat([]byte("a"), anonymousBody)

	c := &http.Client{Timeout: 5 * time.Minute}
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[string]int{}
	for i := range anonymousClients {
		f := anonymousForms[i%len(anonymousForms)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			var body io.Reader = io.MultiReader(bytes.NewReader([]byte(f.form)), bytes.NewReader(filler))
			req, _ := http.NewRequest("POST", w.url+f.path, body)
			if !f.chunked {
				req.ContentLength = int64(len(f.form) + len(filler))
			}
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			what := "error"
			if resp, err := c.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				what = fmt.Sprint(resp.StatusCode)
			}
			mu.Lock()
			codes[f.path+" "+what]++
			mu.Unlock()
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var checks, slowest = 0, time.Duration(0)
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		default:
		}
		start := time.Now()
		if code := get(t, w.url+"/1.0/health-check"); code != 200 {
			t.Errorf("health-check %d while the anonymous forms come = %d; want 200", checks+1, code)
			break
		}
		checks++
		slowest = max(slowest, time.Since(start))
	}
	peak := vmHWM(t, w.cmd.Process.Pid)
	t.Logf("%d anonymous %d MiB forms: the WEBAPP peaked at %d MiB resident (%d MiB at rest); %d health checks, the slowest %v; answers %v",
		anonymousClients, anonymousBody>>20, peak>>20, rest>>20, checks, slowest.Round(time.Millisecond), codes)
	if peak >= anonymousRSS {
		t.Errorf("the WEBAPP peaked at %d MiB resident under %d anonymous %d MiB forms; want under %d MiB",
			peak>>20, anonymousClients, anonymousBody>>20, anonymousRSS>>20)
	}
	for what, n := range codes {
		if bytes.HasSuffix([]byte(what), []byte(" 200")) {
			t.Errorf("%d anonymous posts answered %s; want them refused", n, what)
		}
	}
	w.stop(t)
}
