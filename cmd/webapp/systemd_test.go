package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"lorrycontroller.dev/lc/statedb/dbtest"
)

// notifySocket listens where a WEBAPP started with NOTIFY_SOCKET sends its
// states, as systemd does, and hands them out one line at a time.
type notifySocket struct {
	path   string
	conn   *net.UnixConn
	states chan string
}

func listenNotify(t *testing.T, dir string) *notifySocket {
	t.Helper()
	n := &notifySocket{path: filepath.Join(dir, "notify"), states: make(chan string, 1024)}
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: n.path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	n.conn = conn
	t.Cleanup(func() { conn.Close() })
	go func() {
		defer close(n.states)
		buf := make([]byte, 4096)
		for {
			k, _, err := conn.ReadFromUnix(buf)
			if err != nil {
				return
			}
			for _, line := range strings.Split(string(buf[:k]), "\n") {
				if line != "" {
					n.states <- line
				}
			}
		}
	}()
	return n
}

// next returns the next state line; ok is false once no more come.
func (n *notifySocket) next(t *testing.T) (string, bool) {
	t.Helper()
	select {
	case s, ok := <-n.states:
		return s, ok
	case <-time.After(waitLimit):
		t.Fatalf("no notification in %v", waitLimit)
		return "", false
	}
}

// rest returns the states still to come, after the sender is gone.
func (n *notifySocket) rest(t *testing.T) []string {
	// Datagrams already sent are in the socket's buffer: read them until
	// it stays empty for a moment.
	n.conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	var out []string
	for s := range n.states {
		out = append(out, s)
	}
	return out
}

func TestNotifyReadyWatchdogStopping(t *testing.T) {
	dir := t.TempDir()
	n := listenNotify(t, dir)
	// Pings every 150ms, half the watchdog timeout.
	w := startWebapp(t, dir, startOpts{
		env:  []string{"NOTIFY_SOCKET=" + n.path, "WATCHDOG_USEC=300000"},
		args: []string{"--listen", "127.0.0.1:0"},
	})
	s, _ := n.next(t)
	if s != "READY=1" {
		t.Fatalf("first notification = %q; want READY=1", s)
	}
	// READY=1 means the API answers at once, from a migrated database.
	for _, path := range []string{"/1.0/health-check", "/1.0/status"} {
		if code := get(t, w.url+path); code != 200 {
			t.Errorf("GET %s right after READY=1 = %d; want 200", path, code)
		}
	}
	pings := 0
	for pings < 3 {
		s, _ := n.next(t)
		switch {
		case s == "WATCHDOG=1":
			pings++
		case strings.HasPrefix(s, "STATUS="):
		default:
			t.Fatalf("notification %q while serving; want WATCHDOG=1", s)
		}
	}
	w.stop(t)
	var after []string
	for {
		s, ok := n.next(t)
		if !ok {
			t.Fatal("no STOPPING=1 before the WEBAPP exited")
		}
		if s == "STOPPING=1" {
			break
		}
		if s != "WATCHDOG=1" {
			after = append(after, s)
		}
	}
	if rest := n.rest(t); len(rest) > 0 || len(after) > 0 {
		t.Errorf("notifications %q after SIGTERM and %q after STOPPING=1; want none", after, rest)
	}
	if !strings.Contains(w.log(t), "watchdog on") {
		t.Errorf("the log does not say the watchdog is on:\n%s", w.log(t))
	}
}

func TestSocketActivation(t *testing.T) {
	dir := t.TempDir()
	ln := heldListener(t)
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// --listen names the address of the passed socket, which is taken: a
	// WEBAPP that tried to bind it would fail.
	w := startWebapp(t, dir, startOpts{
		env:       []string{"LISTEN_FDS=1", "LISTEN_FDNAMES=lorry-controller-webapp.socket"},
		files:     []*os.File{f},
		listenPID: true,
		args:      []string{"--listen", ln.Addr().String()},
	})
	if w.url != "http://"+ln.Addr().String() {
		t.Errorf("the WEBAPP serves on %s; want the passed socket %s", w.url, ln.Addr())
	}
	for _, path := range []string{"/1.0/health-check", "/1.0/list-queue"} {
		if code := get(t, w.url+path); code != 200 {
			t.Errorf("GET %s on the passed socket = %d; want 200", path, code)
		}
	}
	// Prometheus can scrape it there.
	resp, err := http.Get(w.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	if !dbtest.DefectOnPostgres(t, "/metrics reads sqlite_sequence and SQLite's pragmas") {
		for _, name := range []string{"lorry_controller_statedb_up", "lorry_controller_lorries", "go_goroutines"} {
			if f := fams[name]; len(f.GetMetric()) != 1 || f.GetMetric()[0].GetGauge() == nil {
				t.Errorf("/metrics has %s = %v; want one gauge", name, f)
			}
		}
		if up := fams["lorry_controller_statedb_up"].GetMetric()[0].GetGauge().GetValue(); up != 1 {
			t.Errorf("lorry_controller_statedb_up = %v; want 1", up)
		}
	}
	if !strings.Contains(w.log(t), "socket_activated=true") {
		t.Errorf("the log does not say the socket was passed:\n%s", w.log(t))
	}
	w.stop(t)
}

func TestJournalLogsAndOriginalConfig(t *testing.T) {
	dir := t.TempDir()
	// A configuration file of the original Lorry Controller.
	conf := filepath.Join(dir, "webapp.conf")
	err := os.WriteFile(conf, []byte(`[config]
log = syslog
log-level = warning
wsgi = yes
debug-port = 0
ghost-timeout = 21600
`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	// JOURNAL_STREAM names the file that standard error goes to, as
	// systemd names the journal's stream.
	w := &webapp{stderr: filepath.Join(dir, "webapp.log")}
	f, err := os.Create(w.stderr)
	if err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	f.Close()
	w = startWebapp(t, dir, startOpts{
		env:  []string{fmt.Sprintf("JOURNAL_STREAM=%d:%d", st.Dev, st.Ino)},
		args: []string{"--config", conf, "--log-level", "info"},
	})
	if !strings.HasPrefix(w.url, "http://127.0.0.1:") || strings.HasSuffix(w.url, ":12765") {
		t.Errorf("the WEBAPP serves on %s; want 127.0.0.1 and the free port that debug-port = 0 asks for", w.url)
	}
	w.stop(t)
	log := w.log(t)
	lines := strings.Split(strings.TrimSpace(log), "\n")
	for _, l := range lines {
		if strings.Contains(l, "time=") || !strings.HasPrefix(l, "<") {
			t.Errorf("log line %q: want a priority prefix and no timestamp under the journal", l)
		}
	}
	for _, want := range []string{
		`<4>level=WARN msg="configuration file" warning="` + conf + `:2: log is ignored`,
		`:4: wsgi is ignored: the WEBAPP serves HTTP itself`,
		`<6>level=INFO msg=listening`,
	} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %q:\n%s", want, log)
		}
	}
}
