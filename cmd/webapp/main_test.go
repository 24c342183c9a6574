package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"lorrycontroller.dev/lc/statedb/dbtest"
	"lorrycontroller.dev/lc/webappconf"
)

// waitLimit bounds every wait of these tests.
const waitLimit = 30 * time.Second

// raceEnabled is set when the tests run with the race detector, so that
// the WEBAPP they start is built with it too.
var raceEnabled bool

// webappBin is the real WEBAPP, built once for the tests.
var webappBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "webapp-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	webappBin = filepath.Join(dir, "lorry-controller-webapp")
	args := []string{"build", "-o", webappBin}
	if raceEnabled {
		args = append(args, "-race")
	}
	if out, err := exec.Command("go", append(args, ".")...).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build the WEBAPP: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	// Tests of PostgreSQL get their databases from dbtest.
	code := dbtest.Run(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

// webapp is a WEBAPP process started by a test.
type webapp struct {
	cmd    *exec.Cmd
	dir    string
	stderr string // file of its standard error
	url    string
	exited chan error
}

// startOpts say how to start the WEBAPP besides its defaults: a state
// database, CONFGIT directory and address file in dir.
type startOpts struct {
	env   []string   // added to a clean environment
	files []*os.File // inherited as fd 3 onwards
	// listenPID runs the WEBAPP through a shell that sets LISTEN_PID to the
	// WEBAPP's pid, as systemd does for socket activation.
	listenPID bool
	args      []string
	bin       string // the WEBAPP to run; "" for webappBin
	// openFiles, if not 0, is the WEBAPP's limit of open files (ulimit -n).
	openFiles int
}

// cleanEnv is the test's environment without what systemd would have set.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "NOTIFY_SOCKET", k == "JOURNAL_STREAM", strings.HasPrefix(k, "WATCHDOG_"), strings.HasPrefix(k, "LISTEN_"):
			continue
		}
		env = append(env, kv)
	}
	return env
}

func startWebapp(t testing.TB, dir string, o startOpts) *webapp {
	t.Helper()
	bin := webappBin
	if o.bin != "" {
		bin = o.bin
	}
	w := &webapp{dir: dir, stderr: filepath.Join(dir, "webapp.log"), exited: make(chan error, 1)}
	args := append([]string{"--statedb", statedbOf(t, dir),
		"--configuration-directory", filepath.Join(dir, "confgit"),
		"--addr-file", filepath.Join(dir, "addr")}, o.args...)
	// A port of the system's choosing unless the test says otherwise or
	// passes a socket: on the default one, two WEBAPPs of tests run at
	// once would keep each other out.
	if !slices.Contains(o.args, "--listen") && !o.listenPID && len(o.files) == 0 {
		args = append(args, "--listen", "127.0.0.1:0")
	}
	switch {
	case o.listenPID:
		w.cmd = exec.Command("/bin/sh", append([]string{"-c", `LISTEN_PID=$$ exec "$0" "$@"`, bin}, args...)...)
	case o.openFiles != 0:
		w.cmd = exec.Command("/bin/sh", append([]string{"-c", fmt.Sprintf(`ulimit -n %d && exec "$0" "$@"`, o.openFiles), bin}, args...)...)
	default:
		w.cmd = exec.Command(bin, args...)
	}
	w.cmd.Env = append(cleanEnv(), o.env...)
	w.cmd.ExtraFiles = o.files
	stderr, err := os.Create(w.stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	w.cmd.Stderr = stderr
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { w.exited <- w.cmd.Wait() }()
	t.Cleanup(func() {
		w.cmd.Process.Kill()
		<-w.exited
	})
	deadline := time.Now().Add(waitLimit)
	for {
		b, err := os.ReadFile(filepath.Join(dir, "addr"))
		if err == nil && bytes.HasSuffix(b, []byte("\n")) {
			w.url = "http://" + strings.TrimSpace(string(b))
			return w
		}
		select {
		case err := <-w.exited:
			w.exited <- err
			t.Fatalf("the WEBAPP exited at start: %v\n%s", err, w.log(t))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the WEBAPP wrote no address in %v\n%s", waitLimit, w.log(t))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// places are the PostgreSQL databases of the tests' directories.
var places sync.Map

// statedbOf is the --statedb of the WEBAPPs a test starts in dir, on the
// backend under test: state.db in dir, or a PostgreSQL database of dir's
// own, made for the first WEBAPP started there and kept for the next,
// until the test that made it ends.
func statedbOf(t testing.TB, dir string) string {
	t.Helper()
	if !dbtest.Postgres() {
		return filepath.Join(dir, "state.db")
	}
	if place, ok := places.Load(dir); ok {
		return place.(string)
	}
	place := dbtest.Database(t)
	places.Store(dir, place)
	t.Cleanup(func() { places.Delete(dir) })
	return place
}

func (w *webapp) log(t testing.TB) string {
	b, _ := os.ReadFile(w.stderr)
	return string(b)
}

// stop sends SIGTERM and checks that the WEBAPP exits 0.
func (w *webapp) stop(t testing.TB) {
	t.Helper()
	if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-w.exited:
		w.exited <- err
		if err != nil {
			t.Fatalf("the WEBAPP exited with %v on SIGTERM\n%s", err, w.log(t))
		}
	case <-time.After(waitLimit):
		t.Fatalf("the WEBAPP did not exit on SIGTERM\n%s", w.log(t))
	}
}

// get makes one request, without retrying, and returns the status code.
func get(t *testing.T, url string) int {
	t.Helper()
	c := &http.Client{Timeout: waitLimit}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// heldListener is a listening loopback socket that the test holds until it
// ends.
func heldListener(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// TestInstalledConfigFile checks the webapp.conf that make install puts in
// /etc: it is read without a warning, and it shows every flag.
func TestInstalledConfigFile(t *testing.T) {
	path := filepath.Join("..", "..", "etc", "webapp.conf")
	cfg, err := webappconf.Parse([]string{"--config", path}, io.Discard)
	if err != nil || len(cfg.Warnings) > 0 {
		t.Fatalf("parse %s: %v %q", path, err, cfg.Warnings)
	}
	if !strings.HasPrefix(cfg.StateDB, "/var/lib/lorry-controller/") {
		t.Errorf("statedb = %q; want it under /var/lib/lorry-controller", cfg.StateDB)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	key := regexp.MustCompile(`^#?([a-z][a-z-]*) =`)
	mentioned := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := key.FindStringSubmatch(sc.Text()); m != nil {
			mentioned[m[1]] = true
		}
	}
	// The usage output lists every flag; webappconf.Parse keeps its flag set to
	// itself.
	var all []string
	var usage strings.Builder
	webappconf.Parse([]string{"--help"}, &usage)
	for _, line := range strings.Split(usage.String(), "\n") {
		if strings.HasPrefix(line, "  -") {
			name := strings.Fields(strings.TrimPrefix(line, "  -"))[0]
			all = append(all, name)
		}
	}
	if len(all) < 10 {
		t.Fatalf("found only flags %q in --help", all)
	}
	for _, name := range all {
		if name != "config" && !mentioned[name] {
			t.Errorf("%s does not mention %s", path, name)
		}
		delete(mentioned, name)
	}
	for name := range mentioned {
		t.Errorf("%s mentions %s, which is no flag", path, name)
	}
}
