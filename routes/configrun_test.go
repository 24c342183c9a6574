package routes

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"lorrycontroller.dev/lc/confgit"
)

// blockedConfig is a batchConfig whose first read stops after its first
// batch until released, and says when it got there.
func blockedConfig(t *testing.T, commit string, n int) (conf *batchConfig, stopped, release chan struct{}) {
	t.Helper()
	stopped, release = make(chan struct{}), make(chan struct{})
	conf = &batchConfig{}
	conf.cfg = &confgit.Config{Commit: commit, Lorries: batchLorries("l", n)}
	first := true
	conf.between = func(batch int) {
		if first && batch == 1 {
			first = false
			close(stopped)
			<-release
		}
	}
	return conf, stopped, release
}

// waitApplied polls status until no application of the configuration
// runs, and answers the status then.
func waitApplied(t *testing.T, ts *testServer) map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, st := ts.call(t, "GET", "/1.0/status?run_queue=false", nil)
		if ap, ok := st["applying_configuration"]; code == 200 && ok && ap == nil {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("status = %d; the configuration is still being applied: %v", code, st["applying_configuration"])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestReadConfigurationOutlivesItsCaller has a caller give up in the
// middle of a read: the read goes on to its end, status shows it under
// way, and a read after it finds nothing changed and reads nothing.
func TestReadConfigurationOutlivesItsCaller(t *testing.T) {
	conf, stopped, release := blockedConfig(t, "c1", 25)
	ts := newTestServer(t, func(s *Server) { s.Config, s.ConfigBatch = conf, 10 })

	ctx, cancel := context.WithCancel(context.Background())
	gone := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "POST", ts.url+"/1.0/read-configuration", strings.NewReader(""))
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		gone <- err
	}()
	<-stopped
	cancel() // the caller times out
	if err := <-gone; err == nil {
		t.Fatal("the cancelled request got an answer")
	}
	_, st := ts.call(t, "GET", "/1.0/status?run_queue=false", nil)
	ap, _ := st["applying_configuration"].(map[string]any)
	if ap == nil || ap["commit"] != "c1" || ap["lorries_done"] != 10.0 || ap["started_at"] != 1000.0 {
		t.Errorf("status applying_configuration = %v; want commit c1, 10 lorries done, started at 1000", st["applying_configuration"])
	}
	close(release)
	st = waitApplied(t, ts)
	if cfg, _ := st["configuration"].(map[string]any); cfg["commit"] != "c1" || cfg["lorries"] != 25.0 {
		t.Errorf("configuration after the caller went away = %v; want commit c1 with its 25 lorries", cfg)
	}
	code, m := ts.call(t, "POST", "/1.0/read-configuration", url.Values{})
	if code != 200 || m["commit"] != "c1" || m["added"] != 0.0 || m["changed"] != 0.0 || m["removed"] != 0.0 {
		t.Errorf("re-read = %d %v; want 200, c1, nothing changed", code, m)
	}
	if conf.reads != 2 || len(conf.batches) != 3 {
		t.Errorf("reads %d, batches %v; want 2 reads, the second reading no file", conf.reads, conf.batches)
	}
}

// TestReadConfigurationAnswersAcceptedWhileApplying asks with a short
// wait: the answer is 202 with the commit being applied, and further
// reads meanwhile join one follow-up read rather than each starting one.
func TestReadConfigurationAnswersAcceptedWhileApplying(t *testing.T) {
	conf, stopped, release := blockedConfig(t, "c1", 25)
	ts := newTestServer(t, func(s *Server) { s.Config, s.ConfigBatch = conf, 10 })

	code, m := ts.call(t, "POST", "/1.0/read-configuration?wait=0", url.Values{})
	if code != http.StatusAccepted {
		t.Fatalf("read-configuration?wait=0 = %d %v; want 202", code, m)
	}
	<-stopped
	for range 2 {
		code, m = ts.call(t, "POST", "/1.0/read-configuration", url.Values{"wait": {"0"}})
		ap, _ := m["applying"].(map[string]any)
		if code != http.StatusAccepted || ap["commit"] != "c1" || ap["lorries_done"] != 10.0 {
			t.Errorf("read-configuration while one runs = %d %v; want 202 applying c1, 10 lorries done", code, m)
		}
	}
	if code, m := ts.call(t, "POST", "/1.0/read-configuration?wait=soon", url.Values{}); code != 400 {
		t.Errorf("wait=soon = %d %v; want 400", code, m)
	}
	close(release)
	// A caller that waits gets the answer of the follow-up read.
	code, m = ts.call(t, "POST", "/1.0/read-configuration?wait=60", url.Values{})
	if code != 200 || m["commit"] != "c1" || m["lorries"] != 25.0 {
		t.Errorf("read-configuration?wait=60 = %d %v; want 200 with c1's 25 lorries", code, m)
	}
	waitApplied(t, ts)
	if conf.reads > 3 || len(conf.batches) != 3 {
		t.Errorf("reads %d, batches %v; want the first read's 3 batches and at most two more reads, reading no file", conf.reads, conf.batches)
	}
}
