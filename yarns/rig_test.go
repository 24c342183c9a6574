package yarns

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lorrycontroller.dev/lc/gittest"
	"lorrycontroller.dev/lc/statedb/dbtest"
)

// rig is a WEBAPP with minions started from Go, for the tests and
// benchmarks that drive more than a scenario script conveniently can.
type rig struct {
	tb      testing.TB
	work    string
	conf    string // CONFGIT's work tree
	url     string
	statedb string
}

// newRig starts a WEBAPP that asks for no token on CONFGIT files, and
// has it read them.
func newRig(tb testing.TB, files map[string]string) *rig {
	tb.Helper()
	r := startRig(tb, files, "--insecure-no-auth")
	r.post("read-configuration")
	return r
}

// startRig starts a WEBAPP on CONFGIT files with args besides the rig's
// own, and leaves the reading of the configuration to the test.
func startRig(tb testing.TB, files map[string]string, args ...string) *rig {
	tb.Helper()
	for _, bin := range []string{webappBin, minionBin} {
		if err := buildErrs[bin]; err != nil {
			tb.Fatal(err)
		}
	}
	r := &rig{tb: tb, work: tb.TempDir(), statedb: dbtest.Place(tb)}
	r.conf = filepath.Join(r.work, "confgit")
	gittest.Git(tb, "", nil, "init", "-q", "-b", "master", r.conf)
	r.commit(files)

	addrFile := filepath.Join(r.work, "addr")
	r.start(filepath.Join(r.work, "webapp.log"), webappBin, append([]string{"--statedb", r.statedb,
		"--confgit-url", r.conf, "--configuration-directory", filepath.Join(r.work, "confgit-clone"),
		"--listen", "127.0.0.1:0", "--addr-file", addrFile, "--log-level", "warn", "--debug-fake-time"}, args...)...)
	for deadline := time.Now().Add(waitLimit); r.url == ""; time.Sleep(10 * time.Millisecond) {
		if a, err := os.ReadFile(addrFile); err == nil && strings.HasSuffix(string(a), "\n") {
			r.url = "http://" + strings.TrimSpace(string(a))
		}
		if time.Now().After(deadline) {
			tb.Fatal("the webapp wrote no address")
		}
	}
	return r
}

// start runs a binary until the test ends, logging to logFile.
func (r *rig) start(logFile, bin string, args ...string) {
	r.tb.Helper()
	log, err := os.Create(logFile)
	if err != nil {
		r.tb.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(binDir, bin), args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		r.tb.Fatal(err)
	}
	r.tb.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(waitLimit):
			cmd.Process.Kill()
			<-done
		}
		log.Close()
	})
}

// minion starts a minion called name with its own working area.
func (r *rig) minion(name string, args ...string) {
	r.tb.Helper()
	r.start(filepath.Join(r.work, "minion-"+name+".log"), minionBin, append([]string{"--webapp-url", r.url, "--name", name,
		"--sleep", "20ms", "--update-interval", "200ms", "--working-area", filepath.Join(r.work, "minion-"+name)}, args...)...)
}

// commit writes files into CONFGIT and commits them.
func (r *rig) commit(files map[string]string) {
	r.tb.Helper()
	for name, data := range files {
		p := filepath.Join(r.conf, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			r.tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			r.tb.Fatal(err)
		}
	}
	gittest.Git(r.tb, r.conf, nil, "add", "-A")
	gittest.Git(r.tb, r.conf, nil, "commit", "-q", "-m", "change")
}

// post calls a route of the WEBAPP, which must answer 2xx.
func (r *rig) post(route string) {
	r.tb.Helper()
	resp, err := http.PostForm(r.url+"/1.0/"+route, url.Values{})
	if err != nil {
		r.tb.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		r.tb.Fatalf("%s: %d %s", route, resp.StatusCode, body)
	}
}

// rigJob is what the rig reads of a job.
type rigJob struct {
	Status  string `json:"status"`
	Exit    *int   `json:"exit"`
	Output  string `json:"output"`
	Started int64  `json:"started"`
	Runtime *struct {
		Name         string   `json:"name"`
		ID           string   `json:"id"`
		Built        *bool    `json:"built"`
		BuildSeconds *float64 `json:"build_seconds"`
	} `json:"runtime"`
}

// job returns job id, or nil while the WEBAPP has none of that id.
func (r *rig) job(id int) *rigJob {
	r.tb.Helper()
	resp, err := http.Get(fmt.Sprintf("%s/1.0/job/%d", r.url, id))
	if err != nil {
		r.tb.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil
	}
	var j rigJob
	if err := json.NewDecoder(resp.Body).Decode(&j); err != nil {
		r.tb.Fatal(err)
	}
	return &j
}

// finished waits until job id has ended and returns it.
func (r *rig) finished(id int, limit time.Duration) *rigJob {
	r.tb.Helper()
	for deadline := time.Now().Add(limit); ; time.Sleep(20 * time.Millisecond) {
		if j := r.job(id); j != nil && j.Exit != nil && j.Status != "running" {
			return j
		}
		if time.Now().After(deadline) {
			r.tb.Fatalf("job %d did not finish within %v", id, limit)
		}
	}
}

func (r *rig) showLogs() {
	logs, _ := filepath.Glob(filepath.Join(r.work, "*.log"))
	for _, name := range logs {
		data, _ := os.ReadFile(name)
		if len(data) > 8<<10 {
			data = data[len(data)-8<<10:]
		}
		r.tb.Logf("--- %s ---\n%s", filepath.Base(name), data)
	}
}
