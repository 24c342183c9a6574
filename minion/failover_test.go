package minion

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"lorrycontroller.dev/lc/heldport"
	"lorrycontroller.dev/lc/venv"
)

// frontMode is how a front answers.
type frontMode int

const (
	// passOn hands every request to the shared fake WEBAPP.
	passOn frontMode = iota
	// badGateway answers 502 itself, as a proxy whose WEBAPP is gone.
	badGateway
	// hang never answers: the request waits until the minion gives up.
	hang
)

// front is one of several WEBAPPs sharing one state database, played by
// a server of its own address in front of one fake WEBAPP, whose state
// every front shares. It can be killed, after which its address refuses
// connections, as the port of a killed WEBAPP does, and started again on
// the same address, which it holds meanwhile.
type front struct {
	t    *testing.T
	f    *fakeWebapp
	port *heldport.Port
	addr string

	mu   sync.Mutex
	srv  *httptest.Server // nil while killed
	mode frontMode
	hits int // requests answered by the front itself
}

func newFront(t *testing.T, f *fakeWebapp) *front {
	t.Helper()
	port, err := heldport.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { port.Close() })
	fr := &front{t: t, f: f, port: port, addr: port.Addr()}
	fr.start()
	t.Cleanup(fr.kill)
	return fr
}

func (fr *front) url() string { return "http://" + fr.addr }

func (fr *front) serve(ln net.Listener) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(fr.handle))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	fr.mu.Lock()
	fr.srv = srv
	fr.mu.Unlock()
}

func (fr *front) handle(w http.ResponseWriter, r *http.Request) {
	// Read whole before anything else: a request cut off by a kill never
	// reaches the fake, as it would not reach a killed WEBAPP's database;
	// and only once it is read does the server see the client hang up.
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	fr.mu.Lock()
	mode := fr.mode
	if mode != passOn {
		fr.hits++
	}
	fr.mu.Unlock()
	switch mode {
	case badGateway:
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		fmt.Fprint(w, "<html><body><h1>502 Bad Gateway</h1></body></html>\n")
	case hang:
		<-r.Context().Done()
	default:
		fr.f.handler.ServeHTTP(w, r)
	}
}

// kill closes the front's listener and cuts its connections, requests
// in flight included.
func (fr *front) kill() {
	fr.mu.Lock()
	srv := fr.srv
	fr.srv = nil
	fr.mu.Unlock()
	if srv != nil {
		srv.CloseClientConnections()
		srv.Close()
	}
}

// start starts the front, or a killed one again, on its address.
func (fr *front) start() {
	fr.t.Helper()
	ln, err := fr.port.Listen()
	if err != nil {
		fr.t.Fatalf("listen on %s: %v", fr.addr, err)
	}
	fr.serve(ln)
}

func (fr *front) setMode(m frontMode) {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	fr.mode = m
}

func (fr *front) hitCount() int {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	return fr.hits
}

// via are the addresses that reqs were sent to.
func via(reqs []request) []string {
	var out []string
	for _, q := range reqs {
		out = append(out, q.Via)
	}
	return out
}

// waitFor polls cond until it holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitAcknowledged waits until the minion has had the answer to the
// update that carried text on stdout: it sends the next update only
// then.
func waitAcknowledged(t *testing.T, f *fakeWebapp, text string) {
	t.Helper()
	waitFor(t, "the update with "+text+" is answered", func() bool {
		d := f.delivered()
		i := indexOf(d, "stdout", text)
		return i >= 0 && i < len(d)-1
	})
}

// gatedLorry is a lorry that writes "started", waits for the file gate,
// then writes "finished" and succeeds.
func gatedLorry(t *testing.T) (lorry, gate string) {
	gate = filepath.Join(t.TempDir(), "go")
	return writeLorry(t, `echo started
while [ ! -e `+sh(gate)+` ]; do sleep 0.01; done
echo finished`), gate
}

// runOnceAsync runs m.RunOnce in the background; the result comes on the
// channel.
func runOnceAsync(t *testing.T, m *Minion) <-chan error {
	done := make(chan error, 1)
	go func() {
		ran, err := runOnce(t, t.Context(), m)
		if err == nil && !ran {
			err = fmt.Errorf("RunOnce found no job")
		}
		done <- err
	}()
	return done
}

// checkJobEnded checks that the job's output arrived once, in order, and
// that it ended with exit 0 through the front want.
func checkJobEnded(t *testing.T, f *fakeWebapp, want *front) {
	t.Helper()
	updates := f.delivered()
	if got, want := joined(updates, "stdout"), "started\nfinished\n"; got != want {
		t.Errorf("stdout delivered: got %q, want %q", got, want)
	}
	if got := joined(updates, "stderr"); got != "" {
		t.Errorf("stderr delivered: got %q, want none", got)
	}
	final := updates[len(updates)-1]
	if got := final.Form.Get("exit"); got != "0" {
		t.Errorf("final exit: got %q, want 0", got)
	}
	if final.Via != want.addr {
		t.Errorf("final update: got it through %s, want %s", final.Via, want.addr)
	}
}

// TestFailoverMidJob kills the first of two WEBAPPs while the minion's
// job runs: the job's updates and its end go through the second, within
// the job's lease, and so does give-me-job after it. The minion stays with
// the second WEBAPP once the first is back.
func TestFailoverMidJob(t *testing.T) {
	f := newFakeWebapp(t)
	a, b := newFront(t, f), newFront(t, f)
	lorry, gate := gatedLorry(t)
	m, _ := newTestMinionAt(t, lorry, a.url(), b.url())
	f.giveMeJob = oneJob(`{"job_id": 21, "path": "delta/failover", "kind": "lorry", "text": "{}", "lease": 30, "kill_grace": 1}`)

	done := runOnceAsync(t, m)
	waitAcknowledged(t, f, "started")
	a.kill()
	killed := len(f.requests())
	touch(t, gate)
	if err := <-done; err != nil {
		t.Fatalf("RunOnce: got %v, want a job run", err)
	}
	checkJobEnded(t, f, b)
	after := f.requests()[killed:]
	for _, q := range after {
		if q.Via != b.addr {
			t.Errorf("%s after the first WEBAPP was killed: got it through %s, want %s", q.Route, q.Via, b.addr)
		}
	}
	if n := indexOf(after, "stdout", "finished"); n < 0 {
		t.Errorf("got no update with the job's last output after the kill")
	}

	if ran, err := runOnce(t, t.Context(), m); ran || err != nil {
		t.Fatalf("RunOnce: got %v, %v; want false, nil", ran, err)
	}
	a.start()
	if ran, err := runOnce(t, t.Context(), m); ran || err != nil {
		t.Fatalf("RunOnce: got %v, %v; want false, nil", ran, err)
	}
	want := []string{a.addr, b.addr, b.addr}
	if got := via(f.routeRequests("give-me-job")); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("give-me-job: got it through %q, want %q", got, want)
	}
}

// TestFailoverOrder has three WEBAPPs: the minion uses the first that
// answers, in the order given, and stays with it until it stops
// answering.
func TestFailoverOrder(t *testing.T) {
	f := newFakeWebapp(t)
	a, b, c := newFront(t, f), newFront(t, f), newFront(t, f)
	m, _ := newTestMinionAt(t, "lorry", a.url(), b.url(), c.url())
	ask := func() {
		t.Helper()
		if ran, err := runOnce(t, t.Context(), m); ran || err != nil {
			t.Fatalf("RunOnce: got %v, %v; want false, nil", ran, err)
		}
	}
	a.kill()
	ask()
	ask()
	b.setMode(badGateway)
	ask()
	a.start()
	ask()
	c.kill()
	ask()
	want := []string{b.addr, b.addr, c.addr, c.addr, a.addr}
	if got := via(f.routeRequests("give-me-job")); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("give-me-job: got it through %q, want %q", got, want)
	}
	// From c, the next in the order given is a: b, which answered 502
	// once, was not asked again.
	if got := b.hitCount(); got != 1 {
		t.Errorf("502 answers of the second WEBAPP: got %d, want 1", got)
	}
}

// TestFailoverAllDown has every WEBAPP down, one refusing connections and
// one behind a proxy that answers 502: the minion keeps asking both, and
// takes its job from the first when it comes back.
func TestFailoverAllDown(t *testing.T) {
	f := newFakeWebapp(t)
	a, b := newFront(t, f), newFront(t, f)
	lorry := writeLorry(t, "echo started; echo finished")
	m, _ := newTestMinionAt(t, lorry, a.url(), b.url())
	f.giveMeJob = oneJob(`{"job_id": 22, "path": "delta/back", "kind": "lorry", "text": "{}", "lease": 30}`)
	a.kill()
	b.setMode(badGateway)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	waitFor(t, "the minion has asked the second WEBAPP three times", func() bool { return b.hitCount() >= 3 })
	if n := len(f.requests()); n != 0 {
		t.Fatalf("requests through a WEBAPP while all were down: got %d, want 0", n)
	}
	a.start()
	waitFor(t, "the job has ended", func() bool {
		d := f.delivered()
		return len(d) > 0 && d[len(d)-1].Form.Get("exit") != "no"
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: got %v, want nil", err)
	}
	checkJobEnded(t, f, a)
	if got := via(f.routeRequests("give-me-job"))[0]; got != a.addr {
		t.Errorf("give-me-job that got the job: got it through %s, want %s", got, a.addr)
	}
}

// TestFailoverWithinLease has the first WEBAPP hang mid-job, longer than
// the job's lease: the minion gives it only its part of the lease and
// reaches the second in time, so that the job runs on.
func TestFailoverWithinLease(t *testing.T) {
	f := newFakeWebapp(t)
	a, b := newFront(t, f), newFront(t, f)
	lorry, gate := gatedLorry(t)
	// The client waits longer than the lease: only the split of the
	// lease lets the second WEBAPP be asked in time.
	m, _ := newTestMinionAt(t, lorry, a.url(), b.url())
	f.giveMeJob = oneJob(`{"job_id": 23, "path": "delta/hang", "kind": "lorry", "text": "{}", "lease": 4, "kill_grace": 1}`)

	done := runOnceAsync(t, m)
	waitAcknowledged(t, f, "started")
	a.setMode(hang)
	waitFor(t, "an update came through the second WEBAPP", func() bool {
		return len(f.delivered()) > 0 && f.delivered()[len(f.delivered())-1].Via == b.addr
	})
	touch(t, gate)
	if err := <-done; err != nil {
		t.Fatalf("RunOnce: got %v, want a job run", err)
	}
	checkJobEnded(t, f, b)
	if got := a.hitCount(); got != 1 {
		t.Errorf("requests the hung WEBAPP got: got %d, want 1", got)
	}
}

// TestFailoverRuntimeDownload fetches a scraper's runtime through the
// second WEBAPP when the first is gone, and stays there.
func TestFailoverRuntimeDownload(t *testing.T) {
	f := newFakeWebapp(t)
	f.runtimeTar = []byte("the runtime's source")
	a, b := newFront(t, f), newFront(t, f)
	m, _ := newTestMinionAt(t, "lorry", a.url(), b.url())
	a.setMode(badGateway)
	for i := range 2 {
		body, err := m.fetchRuntime(t.Context(), venv.Runtime{Name: "scraper", ID: "abc"})
		if err != nil {
			t.Fatalf("download %d: %v", i+1, err)
		}
		got, err := io.ReadAll(body)
		body.Close()
		if err != nil || string(got) != string(f.runtimeTar) {
			t.Errorf("download %d: got %q, %v; want %q", i+1, got, err, f.runtimeTar)
		}
	}
	if got := a.hitCount(); got != 1 {
		t.Errorf("requests to the first WEBAPP, answering 502: got %d, want 1", got)
	}
}
