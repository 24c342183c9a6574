// Package yarns holds the scenario tests of Lorry Controller. Each script in
// testdata is a testscript (.txtar) that starts the real WEBAPP and minions,
// built once per test binary, and drives them through the /1.0 API the way
// an admin, a timer or a CONFGIT hook would.
//
// The commands the scripts use besides the testscript builtins:
//
//	webapp-start [-auth] [flags]
//		Start lorry-controller-webapp on a free port (the same one as
//		before if it was started before), handed its listening socket
//		as systemd's socket activation does, with a state database in
//		$WORK, CONFGIT fetched from $WORK/confgit and the fake clock;
//		flags come after the defaults, so they override them. Sets
//		$URL, the address of a proxy in front of it that checks every
//		request and answer under /1.0 against docs/openapi.yaml, which
//		the commands and the minions use; $DIRECTURL is the WEBAPP's
//		own, for a script that must reach it unchecked. It asks for
//		no token (--insecure-no-auth) unless -auth is given.
//	webapp-stop
//		SIGTERM the WEBAPP and check that it exits 0.
//	webapp-restart
//		Stop it and start it again with the same flags and database.
//	fake-now SECONDS
//		With the WEBAPP stopped, set its fake clock in the state
//		database, as pretend-time would have: it starts from there at
//		the next webapp-start, as after an outage of that length.
//	minion-start [-real] [-bin FILE] NAME [flags]
//		Start lorry-controller-minion NAME, polling often, running
//		$WORK/lorry with the working area $WORK/minion-NAME. With
//		-real, it is given no --lorry-cmd, so it runs the lorry
//		installed beside it: the real one. With -bin, FILE is run,
//		a copy of the minion that the script may replace.
//	minion-stop NAME
//		SIGTERM the minion and check that it exits 0.
//	minion-kill NAME
//		SIGKILL the minion.
//	minion-wait [-exit N] NAME
//		Wait for the minion to exit by itself, and check it exits 0,
//		or N.
//	minion-pause NAME, minion-resume NAME
//		SIGSTOP, SIGCONT the minion (not its job).
//	api METHOD PATH [key=value...]
//		Call the WEBAPP, form-encoded; stdout is "status N" and the
//		body. Fails on a status >= 400, or with "!" on one < 400.
//	api-token [FILE]
//		Send the token in FILE with every request of api and the
//		waits from now on; without FILE, none.
//	json [-re] FIELD WANT
//		Check a field of the last body: a dotted path in which numbers
//		index lists, [KEY=VALUE] picks the one item of a list whose KEY
//		is VALUE (as in hosts[host=$UP_HOST].repos), and len(FIELD) is
//		a length. A string compares as its text, anything else as
//		compact JSON; with -re, WANT is a regular expression.
//	wait-json [-re] PATH FIELD WANT
//		GET PATH until FIELD is WANT, as json checks it.
//	wait-job ID STATUS
//		GET job/ID until its status is STATUS; fails at once if the job
//		ends otherwise.
//	dump-queue
//		Print list-queue and every lorry in it, to save and compare.
//	confgit-commit [-amend] MESSAGE
//		Commit everything under $WORK/confgit, or rewrite the last
//		commit with it; sets $COMMIT.
//	wait-dead PIDFILE
//		Wait until the process whose pid is in PIDFILE is gone.
//	alive PIDFILE
//		Check that the process whose pid is in PIDFILE runs.
//	git-serve ROOT
//		Serve the git repositories under ROOT over smart HTTP, read
//		and write, until the script ends; sets $GITURL.
//	file-serve ROOT
//		Serve the files under ROOT over plain HTTP until the script
//		ends; sets $FILEURL.
//	serve-stop VAR
//		Stop the server whose URL is in $VAR. Its port stays reserved
//		without a listener, so connections to it are refused rather
//		than reaching a server another script started meanwhile.
//	stall-serve
//		Serve HTTP, holding the first request unanswered until its
//		client goes away, and answering 404 to every later one; sets
//		$STALLURL.
//	stall-wait
//		Wait until the held request is open; with "!", until it is
//		closed.
//	proxy-start
//		Start a TCP proxy to the WEBAPP; sets $PROXYURL.
//	proxy-cut, proxy-mend
//		Cut the proxy: its connections are closed, and new ones are
//		accepted but never answered, as over a network that drops
//		everything; mend it again.
//	envsubst FILE...
//		Replace $NAME and ${NAME} in each file by the script's
//		variable of that name, so that CONFGIT files can name the
//		servers and directories of this run.
//	write-wheel DIR DIST VERSION SRC
//		Write into DIR the wheel of DIST at VERSION holding the files
//		under SRC, for pip --no-index --find-links DIR.
//	wait-log NAME REGEXP
//		Wait until $WORK/NAME.log, the log of a process, matches.
//	next-second
//		Wait until the wall clock is in a later second than when the
//		command was called, so that what follows cannot share a
//		timestamp with what came before.
//	cmdline-watch SECRET
//		Look through the command line of every process of the machine
//		for SECRET, every few milliseconds, until cmdline-watch-stop.
//	cmdline-watch-stop
//		Stop watching; print each process whose command line held the
//		secret, one a line.
//
// Fake Upstream and Downstream Hosts, from lorrycontroller.dev/lc/hosts/hoststest,
// run in the test process until the script ends:
//
//	fake-gitlab NAME [-token T] [-servegit]
//	fake-gitea NAME [-token T] [-servegit]
//	fake-github NAME [-token T]
//		Start a fake GitLab, Gitea or GitHub API that only T opens
//		(without -token, only anonymous calls are accepted). Sets
//		$NAME_URL (the base URL: a --downstream-host), $NAME_HOST (its
//		host:port: the "host" of a section), $NAME_API (the base of its
//		API: an "api-url"). With -servegit, every repository is a real
//		bare repository served over smart HTTP at <URL>/<path>.git, and
//		$NAME_AUTHURL is the base URL carrying the token as git's
//		password, for pushing commits into it.
//	fake-repo [-private] NAME PATH [DESCRIPTION [BRANCH]]
//		Add a repository (a GitLab project whose groups are made as
//		needed; owner/name on Gitea and GitHub), public unless
//		-private, with that description and default branch (main
//		unless given; '' for an empty repository).
//	fake-repos NAME GROUP N
//		Add N public repositories GROUP/r0001 onwards, each described
//		"repository N".
//	fake-remove NAME PATH
//		Delete a repository.
//	fake-fail NAME STATUS|ok
//		Answer every API call with STATUS, the host's error body for
//		it; ok answers normally again.
//	fake-changes [-wait N] NAME
//		Print the calls that created or edited something on a GitLab or
//		Gitea, one a line, as "METHOD /path {JSON body, keys sorted}".
//		With -wait, first wait until there are at least N of them.
//
// A receiver of the WEBAPP's notifications runs in the test process too:
//
//	hook-serve SECRETFILE [CODE...]
//		Start a webhook receiver that answers with each CODE in turn,
//		then 200; sets $HOOKURL.
//	hook-posts [-wait N]
//		Print the POSTs received, one a line, as "METHOD EVENT
//		DELIVERY signature-ok|signature-bad CODE BODY", where the
//		signature is checked with the secret and CODE is the answer.
//		With -wait, first wait until there are at least N of them.
//
// $MINION_HOST is the host name that the minions send with give-me-job, as
// set-host-max-jobs takes it.
//
// Nothing waits a fixed time: every wait polls until a deadline.
package yarns

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"lorrycontroller.dev/lc/githttp"
	"lorrycontroller.dev/lc/heldport"
	"lorrycontroller.dev/lc/hosts/hoststest"
	"lorrycontroller.dev/lc/openapitest"
	"lorrycontroller.dev/lc/statedb"
	"lorrycontroller.dev/lc/statedb/dbtest"
)

// waitLimit bounds every wait of a scenario.
const waitLimit = 30 * time.Second

const (
	webappBin = "lorry-controller-webapp"
	minionBin = "lorry-controller-minion"
	lorryBin  = "lorry"
)

var (
	// binDir holds the binaries built for this run.
	binDir string
	// buildErrs says why a binary could not be built, by binary name. A
	// scenario that needs a missing binary fails with the reason.
	buildErrs = map[string]error{}
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "lorry-controller-yarns-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binDir = dir
	defer dbtest.Stop()

	pkgs := map[string]string{
		webappBin: "lorrycontroller.dev/lc/cmd/webapp",
		minionBin: "lorrycontroller.dev/lc/cmd/minion",
		lorryBin:  "lorrycontroller.dev/lc/cmd/lorry",
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for bin, pkg := range pkgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command("go", "build", "-o", filepath.Join(dir, bin), pkg)
			out, err := cmd.CombinedOutput()
			if err != nil {
				mu.Lock()
				buildErrs[bin] = fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return m.Run()
}

func TestScenarios(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata",
		Setup:               setup,
		Cmds:                commands,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
	})
}

// TestField checks the paths that json and wait-json take.
func TestField(t *testing.T) {
	body := []byte(`{"hosts": [{"host": "a.example:1", "repos": 2}, {"host": "b.example:1", "repos": 3}],
		"queue": ["x", "y"], "n": {"m": [1, [4, 5]]}}`)
	for _, tc := range []struct {
		name, path, want, err string
	}{
		{name: "field", path: "queue", want: `["x","y"]`},
		{name: "index", path: "queue.1", want: "y"},
		{name: "nested index", path: "n.m.1.0", want: "4"},
		{name: "length", path: "len(hosts)", want: "2"},
		{name: "select", path: "hosts[host=b.example:1].repos", want: "3"},
		{name: "select alone", path: "hosts.[host=a.example:1]", want: `{"host":"a.example:1","repos":2}`},
		{name: "length of selected", path: "len(hosts[repos=2])", want: "2"},
		{name: "select nothing", path: "hosts[host=c].repos", err: "0 items of a list of 2 match"},
		{name: "select no list", path: "n[m=1]", err: "is not a list"},
		{name: "no field", path: "hosts.0.nope", err: `no field "nope"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := field(body, tc.path)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("field(%q) = %v, %v; want an error with %q", tc.path, show(v), err, tc.err)
				}
				return
			}
			if err != nil || show(v) != tc.want {
				t.Fatalf("field(%q) = %v, %v; want %s", tc.path, show(v), err, tc.want)
			}
		})
	}
}

type scenarioKey struct{}

// scenario is the state of one running script.
type scenario struct {
	// t is the script's own test, which ends right after the script.
	t    testscript.T
	work string
	// statedb is the WEBAPP's --statedb: a file in work, or a database
	// of its own on PostgreSQL ($STATEDB in the script).
	statedb string
	// envNames are the variables handed on to the binaries, read afresh
	// from the script's environment at each start.
	envNames []string

	webapp     *process
	webappArgs []string
	// webappPort is the WEBAPP's port, held by the script from its first
	// start: one started again comes back on it, and while it is down,
	// connections to it are refused.
	webappPort *heldport.Port
	// auth is set when the WEBAPP asks for tokens (webapp-start -auth);
	// else it runs with --insecure-no-auth.
	auth bool
	// token is what api and the json waits send as a bearer token.
	token string
	// url is the validating proxy's, in front of the WEBAPP; its port
	// is held from the first start as the WEBAPP's is.
	url       string
	proxyPort *heldport.Port
	stopProxy func()
	report    func(string)
	minions   map[string]*process
	// servers are the HTTP servers of git-serve and file-serve, by URL.
	servers map[string]*httptest.Server
	// fakes are the fake hosts, by the name the script gave them.
	fakes map[string]fakeHost
	// staller is the server of stall-serve, proxy the one of proxy-start.
	staller *staller
	proxy   *proxy
	// hooks is the receiver of hook-serve.
	hooks *hookReceiver
	// cmdline is the watch of cmdline-watch.
	cmdline *cmdlineWatch

	lastBody []byte
}

var gitEnv = []string{
	"GIT_AUTHOR_NAME=Scenario",
	"GIT_AUTHOR_EMAIL=scenario@example.invalid",
	"GIT_COMMITTER_NAME=Scenario",
	"GIT_COMMITTER_EMAIL=scenario@example.invalid",
	"GIT_CONFIG_NOSYSTEM=1",
	"GIT_CONFIG_GLOBAL=/dev/null",
}

func setup(env *testscript.Env) error {
	env.Setenv("PATH", binDir+string(os.PathListSeparator)+env.Getenv("PATH"))
	env.Setenv("BINDIR", binDir)
	for _, kv := range gitEnv {
		k, v, _ := strings.Cut(kv, "=")
		env.Setenv(k, v)
	}
	host, err := os.Hostname()
	if err != nil {
		return fmt.Errorf("host name: %w", err)
	}
	env.Setenv("MINION_HOST", host)
	s := &scenario{t: env.T(), work: env.WorkDir, minions: map[string]*process{}, servers: map[string]*httptest.Server{},
		fakes: map[string]fakeHost{}, statedb: filepath.Join(env.WorkDir, "state.db")}
	if dbtest.Postgres() {
		// Dropped last, after every process of the script has stopped.
		place, drop, err := dbtest.Create()
		if err != nil {
			return err
		}
		env.Defer(drop)
		s.statedb = place
	}
	env.Setenv("STATEDB", s.statedb)
	// The proxies report from their own goroutines.
	errorf, ok := env.T().(interface{ Errorf(string, ...any) })
	if !ok {
		return fmt.Errorf("the script's T (%T) has no Errorf", env.T())
	}
	s.report = func(msg string) { errorf.Errorf("validating proxy: %s", msg) }
	for _, kv := range env.Vars {
		k, _, _ := strings.Cut(kv, "=")
		s.envNames = append(s.envNames, k)
	}
	env.Values[scenarioKey{}] = s

	// Runs after every process of the script has been stopped, so the
	// logs are complete.
	t := env.T()
	env.Defer(func() {
		if f, ok := t.(interface{ Failed() bool }); ok && f.Failed() {
			s.showLogs(t)
		}
	})
	return nil
}

func state(ts *testscript.TestScript) *scenario {
	return ts.Value(scenarioKey{}).(*scenario)
}

// showLogs puts the logs of the script's processes into the test output.
func (s *scenario) showLogs(t testscript.T) {
	logs, _ := filepath.Glob(filepath.Join(s.work, "*.log"))
	sort.Strings(logs)
	for _, name := range logs {
		data, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		const max = 16 << 10
		if len(data) > max {
			data = append([]byte("...\n"), data[len(data)-max:]...)
		}
		t.Log(fmt.Sprintf("--- %s ---\n%s", filepath.Base(name), data))
	}
}

var commands = map[string]func(ts *testscript.TestScript, neg bool, args []string){
	"webapp-start":   cmdWebappStart,
	"webapp-stop":    cmdWebappStop,
	"webapp-restart": cmdWebappRestart,
	"fake-now":       cmdFakeNow,
	"minion-start":   cmdMinionStart,
	"minion-stop":    cmdMinionStop,
	"minion-kill":    cmdMinionKill,
	"minion-wait":    cmdMinionWait,
	"minion-pause":   cmdMinionSignal(syscall.SIGSTOP),
	"minion-resume":  cmdMinionSignal(syscall.SIGCONT),
	"minion-stopped": cmdMinionStopped,
	"watchdog-kill":  cmdWatchdogKill,
	"api":            cmdAPI,
	"api-token":      cmdAPIToken,
	"json":           cmdJSON,
	"wait-json":      cmdWaitJSON,
	"wait-job":       cmdWaitJob,
	"dump-queue":     cmdDumpQueue,
	"confgit-commit": cmdConfgitCommit,
	"wait-dead":      cmdWaitDead,
	"alive":          cmdAlive,
	"stall-serve":    cmdStallServe,
	"stall-wait":     cmdStallWait,
	"proxy-start":    cmdProxyStart,
	"proxy-cut":      cmdProxySet(true),
	"proxy-mend":     cmdProxySet(false),
	"git-serve":      cmdServe("git-serve", "GITURL", gitHandler),
	"lfs-serve":      cmdServe("lfs-serve", "GITURL", lfsHandler),
	"lfs-object":     cmdLFSObject,
	"file-serve":     cmdServe("file-serve", "FILEURL", fileHandler),
	"serve-stop":     cmdServeStop,
	"envsubst":       cmdEnvsubst,
	"next-second":    cmdNextSecond,
	"fake-gitlab":    cmdFakeHost("gitlab"),
	"fake-gitea":     cmdFakeHost("gitea"),
	"fake-github":    cmdFakeHost("github"),
	"fake-repo":      cmdFakeRepo,
	"fake-repos":     cmdFakeRepos,
	"fake-remove":    cmdFakeRemove,
	"fake-fail":      cmdFakeFail,
	"fake-changes":   cmdFakeChanges,
	"hook-serve":     cmdHookServe,
	"hook-posts":     cmdHookPosts,
	"forge-post":     cmdForgePost,

	"cmdline-watch":      cmdCmdlineWatch,
	"cmdline-watch-stop": cmdCmdlineWatchStop,
}

// noNeg fails the script if a command that cannot be negated was.
func noNeg(ts *testscript.TestScript, neg bool, name string) {
	if neg {
		ts.Fatalf("%s does not support '!'", name)
	}
}

// --- processes ---

// process is a binary started by a script.
type process struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error // from Wait, once done is closed
}

// startBin starts the program at path, a copy of the binary name.
func (s *scenario) startBin(ts *testscript.TestScript, name, path, logName string, args []string) *process {
	return s.startWith(ts, name, path, logName, args, nil)
}

// startWith is startBin, handing the process sock, when not nil, as
// systemd's socket activation does: as descriptor 3, named by
// LISTEN_FDS and LISTEN_PID.
func (s *scenario) startWith(ts *testscript.TestScript, name, path, logName string, args []string, sock *os.File) *process {
	if err := buildErrs[name]; err != nil {
		ts.Fatalf("%s was not built: %v", name, err)
	}
	logFile, err := os.OpenFile(filepath.Join(s.work, logName), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	ts.Check(err)
	defer logFile.Close()
	fmt.Fprintf(logFile, "### %s %s\n", name, strings.Join(args, " "))

	cmd := exec.Command(path, args...)
	if sock != nil {
		// LISTEN_PID is the pid of the process that is to take the
		// sockets, known only once it runs.
		cmd = exec.Command("/bin/sh", append([]string{"-c", `LISTEN_PID=$$; export LISTEN_PID; exec "$0" "$@"`, path}, args...)...)
		cmd.ExtraFiles = []*os.File{sock}
	}
	cmd.Dir = s.work
	cmd.Stdout, cmd.Stderr = logFile, logFile
	for _, k := range s.envNames {
		cmd.Env = append(cmd.Env, k+"="+ts.Getenv(k))
	}
	if sock != nil {
		cmd.Env = append(cmd.Env, "LISTEN_FDS=1")
	}
	ts.Check(cmd.Start())
	p := &process{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	ts.Defer(func() { p.stop(syscall.SIGTERM) })
	return p
}

func (p *process) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// stop signals p and waits for it to exit, killing it if it takes longer
// than waitLimit. It returns Wait's error.
func (p *process) stop(sig syscall.Signal) error {
	if p.running() {
		p.cmd.Process.Signal(sig)
		// A paused process acts on the signal only once resumed.
		p.cmd.Process.Signal(syscall.SIGCONT)
	}
	select {
	case <-p.done:
	case <-time.After(waitLimit):
		p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s did not exit within %v of %v", p.name, waitLimit, sig)
	}
	return p.err
}

func cmdWebappStart(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "webapp-start")
	s := state(ts)
	if s.webapp != nil && s.webapp.running() {
		ts.Fatalf("webapp already running")
	}
	s.auth = len(args) > 0 && args[0] == "-auth"
	if s.auth {
		args = args[1:]
	}
	s.webappArgs = args
	s.startWebapp(ts)
}

func (s *scenario) startWebapp(ts *testscript.TestScript) {
	addrFile := filepath.Join(s.work, "addr")
	os.Remove(addrFile)
	// A WEBAPP started again comes back on the same address, where the
	// minions look for it.
	if s.webappPort == nil {
		port, err := heldport.New()
		ts.Check(err)
		ts.Defer(func() { port.Close() })
		s.webappPort = port
	}
	ln, err := s.webappPort.Listen()
	ts.Check(err)
	sock, err := ln.File()
	ln.Close()
	ts.Check(err)
	// Once the WEBAPP has it, its socket is the WEBAPP's alone, and is
	// closed when the WEBAPP dies.
	defer sock.Close()
	args := []string{
		"--addr-file", addrFile,
		"--statedb", s.statedb,
		"--confgit-url", filepath.Join(s.work, "confgit"),
		"--configuration-directory", filepath.Join(s.work, "confgit-clone"),
		"--debug-fake-time",
		"--log-level", "debug",
	}
	if !s.auth {
		args = append(args, "--insecure-no-auth")
	}
	p := s.startWith(ts, webappBin, filepath.Join(binDir, webappBin), "webapp.log", append(args, s.webappArgs...), sock)
	s.webapp = p
	deadline := time.Now().Add(waitLimit)
	for {
		data, err := os.ReadFile(addrFile)
		if err == nil && bytes.HasSuffix(data, []byte("\n")) {
			direct := "http://" + strings.TrimSpace(string(data))
			ts.Setenv("DIRECTURL", direct)
			s.startProxy(ts, direct)
			return
		}
		if !p.running() {
			ts.Fatalf("webapp exited before listening: %v", p.err)
		}
		if time.Now().After(deadline) {
			ts.Fatalf("webapp wrote no address to %s within %v", addrFile, waitLimit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startProxy starts the validating proxy in front of the WEBAPP at
// direct, on the proxy's held port, and sets $URL to it.
func (s *scenario) startProxy(ts *testscript.TestScript, direct string) {
	doc, err := openapitest.Load()
	ts.Check(err)
	// A WEBAPP that died by itself left its proxy serving: it goes
	// first, so that the port has one listener.
	if s.stopProxy != nil {
		s.stopProxy()
		s.stopProxy = nil
	}
	if s.proxyPort == nil {
		port, err := heldport.New()
		ts.Check(err)
		ts.Defer(func() { port.Close() })
		s.proxyPort = port
	}
	ln, err := s.proxyPort.Listen()
	ts.Check(err)
	target, err := url.Parse(direct)
	ts.Check(err)
	// A transport of its own per start: no connection to a WEBAPP
	// stopped outlives it.
	transport := http.DefaultTransport.(*http.Transport).Clone()
	stop := serveValidProxy(newValidProxy(doc, target, transport, s.report), ln)
	s.stopProxy = func() {
		stop()
		transport.CloseIdleConnections()
	}
	ts.Defer(func() {
		if s.stopProxy != nil {
			s.stopProxy()
			s.stopProxy = nil
		}
	})
	s.url = "http://" + s.proxyPort.Addr()
	ts.Setenv("URL", s.url)
}

// stopWebapp stops the WEBAPP, and then its proxy: while the WEBAPP is
// down, connections to $URL are refused, as they are to it.
func (s *scenario) stopWebapp(ts *testscript.TestScript) {
	if s.webapp == nil || !s.webapp.running() {
		ts.Fatalf("webapp is not running")
	}
	err := s.webapp.stop(syscall.SIGTERM)
	if s.stopProxy != nil {
		s.stopProxy()
		s.stopProxy = nil
	}
	if err != nil {
		ts.Fatalf("webapp did not stop cleanly: %v", err)
	}
}

func cmdWebappStop(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "webapp-stop")
	state(ts).stopWebapp(ts)
}

func cmdWebappRestart(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "webapp-restart")
	s := state(ts)
	s.stopWebapp(ts)
	s.startWebapp(ts)
}

// cmdFakeNow sets the fake clock of a stopped WEBAPP. Time cannot pass
// for the WEBAPP while it is stopped otherwise: its clock moves only by
// pretend-time, which it must be running to answer.
func cmdFakeNow(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "fake-now")
	if len(args) != 1 {
		ts.Fatalf("usage: fake-now SECONDS")
	}
	now, err := strconv.ParseInt(args[0], 10, 64)
	if err != nil {
		ts.Fatalf("fake-now: %q is not a number of seconds", args[0])
	}
	s := state(ts)
	if s.webapp != nil && s.webapp.running() {
		ts.Fatalf("fake-now: stop the webapp first; pretend-time moves the clock of a running one")
	}
	ctx := context.Background()
	db, err := statedb.Open(ctx, s.statedb, statedb.Options{})
	ts.Check(err)
	defer db.Close()
	ts.Check(db.Update(ctx, func(tx *statedb.Tx) error { return tx.SetFakeNow(ctx, now) }))
}

func cmdMinionStart(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "minion-start")
	realLorry := len(args) > 0 && args[0] == "-real"
	if realLorry {
		args = args[1:]
	}
	bin := filepath.Join(binDir, minionBin)
	if len(args) > 1 && args[0] == "-bin" {
		bin, args = ts.MkAbs(args[1]), args[2:]
	}
	if len(args) < 1 {
		ts.Fatalf("usage: minion-start [-real] [-bin FILE] NAME [flags]")
	}
	s := state(ts)
	name := args[0]
	if p := s.minions[name]; p != nil && p.running() {
		ts.Fatalf("minion %s is already running", name)
	}
	if s.url == "" {
		ts.Fatalf("start the webapp before minion %s", name)
	}
	wa := filepath.Join(s.work, "minion-"+name)
	ts.Check(os.MkdirAll(wa, 0o755))
	flags := []string{
		"--webapp-url", s.url,
		"--name", name,
		"--sleep", "50ms",
		"--update-interval", "100ms",
		"--kill-grace", "2s",
		"--working-area", wa,
	}
	if realLorry {
		// The minion finds lorry beside itself, as when installed.
		if err := buildErrs[lorryBin]; err != nil {
			ts.Fatalf("%s was not built: %v", lorryBin, err)
		}
	} else {
		flags = append(flags, "--lorry-cmd", filepath.Join(s.work, "lorry"))
	}
	// A scenario's own --webapp-url (a proxy's, say) is the minion's
	// only one: repeated, the flag would add the WEBAPP's beside it.
	for _, a := range args[1:] {
		if a == "--webapp-url" || strings.HasPrefix(a, "--webapp-url=") {
			flags = flags[2:]
			break
		}
	}
	s.minions[name] = s.startBin(ts, minionBin, bin, "minion-"+name+".log", append(flags, args[1:]...))
}

func (s *scenario) minion(ts *testscript.TestScript, args []string, cmd string) *process {
	if len(args) != 1 {
		ts.Fatalf("usage: %s NAME", cmd)
	}
	p := s.minions[args[0]]
	if p == nil || !p.running() {
		ts.Fatalf("minion %s is not running", args[0])
	}
	return p
}

func cmdMinionStop(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "minion-stop")
	p := state(ts).minion(ts, args, "minion-stop")
	if err := p.stop(syscall.SIGTERM); err != nil {
		ts.Fatalf("minion %s did not stop cleanly: %v", args[0], err)
	}
}

func cmdMinionKill(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "minion-kill")
	p := state(ts).minion(ts, args, "minion-kill")
	p.stop(syscall.SIGKILL)
}

func cmdMinionWait(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "minion-wait")
	want := 0
	if len(args) == 3 && args[0] == "-exit" {
		var err error
		if want, err = strconv.Atoi(args[1]); err != nil {
			ts.Fatalf("minion-wait: -exit %q is not a number", args[1])
		}
		args = args[2:]
	}
	if len(args) != 1 {
		ts.Fatalf("usage: minion-wait [-exit N] NAME")
	}
	p := state(ts).minions[args[0]]
	if p == nil {
		ts.Fatalf("minion %s was never started", args[0])
	}
	select {
	case <-p.done:
	case <-time.After(waitLimit):
		ts.Fatalf("minion %s still runs after %v", args[0], waitLimit)
	}
	code := 0
	var exitErr *exec.ExitError
	switch {
	case errors.As(p.err, &exitErr):
		code = exitErr.ExitCode()
	case p.err != nil:
		ts.Fatalf("minion %s: %v", args[0], p.err)
	}
	if code != want {
		ts.Fatalf("minion %s: exit status %d, want %d", args[0], code, want)
	}
}

func cmdMinionSignal(sig syscall.Signal) func(ts *testscript.TestScript, neg bool, args []string) {
	return func(ts *testscript.TestScript, neg bool, args []string) {
		noNeg(ts, neg, "minion-pause/resume")
		p := state(ts).minion(ts, args, "minion-pause/resume")
		ts.Check(p.cmd.Process.Signal(sig))
		// Return only once the signal has taken effect.
		want := sig == syscall.SIGSTOP
		deadline := time.Now().Add(waitLimit)
		for stopped(p.cmd.Process.Pid) != want {
			if time.Now().After(deadline) {
				ts.Fatalf("minion %s: %v had no effect within %v", args[0], sig, waitLimit)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// cmdMinionStopped checks that a minion is stopped (minion-pause), or
// with "!" that it is not.
func cmdMinionStopped(ts *testscript.TestScript, neg bool, args []string) {
	p := state(ts).minion(ts, args, "minion-stopped")
	if stopped(p.cmd.Process.Pid) == neg {
		ts.Fatalf("minion %s: stopped is %v", args[0], !neg)
	}
}

// cmdWatchdogKill kills the job watchdogs of a minion with SIGKILL, as
// an OOM killer might, so that a minion killed after them leaves its job
// to its next start.
func cmdWatchdogKill(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "watchdog-kill")
	p := state(ts).minion(ts, args, "watchdog-kill")
	entries, err := os.ReadDir("/proc")
	ts.Check(err)
	killed := 0
	for _, e := range entries {
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		argv := strings.Split(string(cmdline), "\x00")
		// The parent's pid is the second field after the command name.
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(p.cmd.Process.Pid) && len(argv) > 1 && argv[1] == "watchdog" {
			pid, _ := strconv.Atoi(e.Name())
			ts.Check(syscall.Kill(pid, syscall.SIGKILL))
			killed++
		}
	}
	if killed == 0 {
		ts.Fatalf("watchdog-kill: minion %s runs no watchdog", args[0])
	}
}

// --- the API ---

// client bounds each request well below waitLimit: one slow answer is
// already a failure.
var client = &http.Client{Timeout: 10 * time.Second}

// call makes one request and returns the status code and the body.
func (s *scenario) call(method, path string, params []string) (int, []byte, error) {
	if s.url == "" {
		return 0, nil, errors.New("the webapp was never started")
	}
	form := url.Values{}
	for _, kv := range params {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return 0, nil, fmt.Errorf("parameter %q is not key=value", kv)
		}
		form.Add(k, v)
	}
	target := s.url + path
	var body io.Reader
	switch method {
	case http.MethodGet:
		if len(form) > 0 {
			target += "?" + form.Encode()
		}
	default:
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, target, body)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

func cmdAPI(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: api METHOD PATH [key=value...]")
	}
	s := state(ts)
	code, body, err := s.call(args[0], args[1], args[2:])
	ts.Check(err)
	s.lastBody = body
	fmt.Fprintf(ts.Stdout(), "status %d\n%s", code, body)
	switch {
	case !neg && code >= 400:
		ts.Fatalf("%s %s: status %d", args[0], args[1], code)
	case neg && code < 400:
		ts.Fatalf("%s %s: status %d, want an error", args[0], args[1], code)
	}
}

// cmdForgePost posts FILE to PATH as a forge posts its webhook: a JSON
// body with the headers given as Name:Value. It prints and checks the
// answer as api does.
func cmdForgePost(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: forge-post PATH FILE [Header:Value...]")
	}
	s := state(ts)
	req, err := http.NewRequest(http.MethodPost, s.url+args[0], strings.NewReader(ts.ReadFile(args[1])))
	ts.Check(err)
	req.Header.Set("Content-Type", "application/json")
	for _, h := range args[2:] {
		k, v, ok := strings.Cut(h, ":")
		if !ok {
			ts.Fatalf("header %q is not Name:Value", h)
		}
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	ts.Check(err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	ts.Check(err)
	s.lastBody = body
	fmt.Fprintf(ts.Stdout(), "status %d\n%s", resp.StatusCode, body)
	switch {
	case !neg && resp.StatusCode >= 400:
		ts.Fatalf("POST %s: status %d", args[0], resp.StatusCode)
	case neg && resp.StatusCode < 400:
		ts.Fatalf("POST %s: status %d, want an error", args[0], resp.StatusCode)
	}
}

// cmdAPIToken makes the requests that follow send the token in FILE; with
// no FILE, none.
func cmdAPIToken(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "api-token")
	s := state(ts)
	switch len(args) {
	case 0:
		s.token = ""
	case 1:
		s.token = strings.TrimSpace(ts.ReadFile(args[0]))
	default:
		ts.Fatalf("usage: api-token [FILE]")
	}
}

// field finds the value at a dotted path in a JSON document.
func field(body []byte, path string) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("answer is not JSON: %v", err)
	}
	length := strings.HasPrefix(path, "len(") && strings.HasSuffix(path, ")")
	if length {
		path = path[len("len(") : len(path)-1]
	}
	for _, seg := range splitFieldPath(path) {
		if sel, ok := strings.CutPrefix(seg, "["); ok {
			item, err := selectItem(v, strings.TrimSuffix(sel, "]"))
			if err != nil {
				return nil, err
			}
			v = item
			continue
		}
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[seg]; !ok {
				return nil, fmt.Errorf("no field %q in %s", seg, show(x))
			}
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(x) {
				return nil, fmt.Errorf("no item %q in a list of %d", seg, len(x))
			}
			v = x[i]
		default:
			return nil, fmt.Errorf("%q: %s has no fields", seg, show(x))
		}
	}
	if length {
		switch x := v.(type) {
		case []any:
			return len(x), nil
		case map[string]any:
			return len(x), nil
		default:
			return nil, fmt.Errorf("%s has no length", show(x))
		}
	}
	return v, nil
}

// splitFieldPath splits a field path at its dots, apart from those in a
// selector, and makes "name[KEY=VALUE]" two segments, "name" and
// "[KEY=VALUE]".
func splitFieldPath(path string) []string {
	var segs []string
	start, depth := 0, 0
	for i := 0; i < len(path); i++ {
		switch c := path[i]; {
		case c == '[':
			if depth == 0 && i > start {
				segs = append(segs, path[start:i])
				start = i
			}
			depth++
		case c == ']' && depth > 0:
			depth--
			if depth == 0 {
				segs = append(segs, path[start:i+1])
				if i+1 < len(path) && path[i+1] == '.' {
					i++
				}
				start = i + 1
			}
		case c == '.' && depth == 0:
			segs = append(segs, path[start:i])
			start = i + 1
		}
	}
	if start < len(path) || len(segs) == 0 {
		segs = append(segs, path[start:])
	}
	return segs
}

// selectItem picks the one object of a list whose field key shows as
// want.
func selectItem(v any, sel string) (any, error) {
	key, want, ok := strings.Cut(sel, "=")
	list, isList := v.([]any)
	switch {
	case !ok:
		return nil, fmt.Errorf("selector [%s] is not [KEY=VALUE]", sel)
	case !isList:
		return nil, fmt.Errorf("[%s]: %s is not a list", sel, show(v))
	}
	var found []any
	for _, item := range list {
		if m, ok := item.(map[string]any); ok {
			if got, ok := m[key]; ok && show(got) == want {
				found = append(found, item)
			}
		}
	}
	if len(found) != 1 {
		return nil, fmt.Errorf("[%s]: %d items of a list of %d match, want 1", sel, len(found), len(list))
	}
	return found[0], nil
}

// show writes a JSON value the way scripts compare it: a string as itself,
// anything else as compact JSON.
func show(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// matcher parses "[-re] FIELD WANT" and reports whether a body matches.
type matcher struct {
	field, want string
	re          *regexp.Regexp
}

func parseMatcher(ts *testscript.TestScript, args []string, usage string) (matcher, []string) {
	var m matcher
	re := len(args) > 0 && args[0] == "-re"
	if re {
		args = args[1:]
	}
	if len(args) < 2 {
		ts.Fatalf("usage: %s", usage)
	}
	n := len(args)
	m.field, m.want = args[n-2], args[n-1]
	if re {
		var err error
		m.re, err = regexp.Compile(m.want)
		ts.Check(err)
	}
	return m, args[:n-2]
}

func (m matcher) match(body []byte) (got string, ok bool, err error) {
	v, err := field(body, m.field)
	if err != nil {
		return "", false, err
	}
	got = show(v)
	if m.re != nil {
		return got, m.re.MatchString(got), nil
	}
	return got, got == m.want, nil
}

func (m matcher) String() string {
	if m.re != nil {
		return fmt.Sprintf("%s matching %q", m.field, m.want)
	}
	return fmt.Sprintf("%s = %s", m.field, m.want)
}

func cmdJSON(ts *testscript.TestScript, neg bool, args []string) {
	m, rest := parseMatcher(ts, args, "json [-re] FIELD WANT")
	if len(rest) != 0 {
		ts.Fatalf("usage: json [-re] FIELD WANT")
	}
	got, ok, err := m.match(state(ts).lastBody)
	ts.Check(err)
	switch {
	case !neg && !ok:
		ts.Fatalf("want %s, got %s", m, got)
	case neg && ok:
		ts.Fatalf("want not %s, got %s", m, got)
	}
}

// poll GETs path until done says the answer is the one wanted, failing
// with what it last saw after waitLimit.
func poll(ts *testscript.TestScript, path string, done func(code int, body []byte) (bool, string)) {
	s := state(ts)
	deadline := time.Now().Add(waitLimit)
	var last string
	for {
		code, body, err := s.call(http.MethodGet, path, nil)
		if err != nil {
			last = err.Error()
		} else {
			s.lastBody = body
			ok, why := done(code, body)
			if ok {
				fmt.Fprintf(ts.Stdout(), "status %d\n%s", code, body)
				return
			}
			last = fmt.Sprintf("%s\nstatus %d\n%s", why, code, body)
		}
		if time.Now().After(deadline) {
			ts.Fatalf("GET %s: gave up after %v; last answer: %s", path, waitLimit, last)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func cmdWaitJSON(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "wait-json")
	const usage = "wait-json [-re] PATH FIELD WANT"
	m, rest := parseMatcher(ts, args, usage)
	if len(rest) != 1 {
		ts.Fatalf("usage: %s", usage)
	}
	poll(ts, rest[0], func(code int, body []byte) (bool, string) {
		if code != http.StatusOK {
			return false, "not 200"
		}
		got, ok, err := m.match(body)
		if err != nil {
			return false, err.Error()
		}
		return ok, fmt.Sprintf("want %s, got %s", m, got)
	})
}

// finished are the states a job does not leave.
var finished = map[string]bool{"succeeded": true, "failed": true, "killed": true, "timed-out": true, "lost": true}

func cmdWaitJob(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "wait-job")
	if len(args) != 2 {
		ts.Fatalf("usage: wait-job ID STATUS")
	}
	id, want := args[0], args[1]
	var wrong string
	poll(ts, "/1.0/job/"+id, func(code int, body []byte) (bool, string) {
		if code == http.StatusNotFound {
			return false, "no such job yet"
		}
		v, err := field(body, "status")
		if err != nil {
			return false, err.Error()
		}
		got := show(v)
		if got != want && finished[got] {
			wrong = fmt.Sprintf("job %s ended %s, want %s:\n%s", id, got, want, body)
			return true, ""
		}
		return got == want, "status is " + got
	})
	if wrong != "" {
		ts.Fatalf("%s", wrong)
	}
}

// cmdDumpQueue prints the run queue and every lorry in it, so a script can
// save the state and compare it later.
func cmdDumpQueue(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "dump-queue")
	s := state(ts)
	get := func(path string) []byte {
		code, body, err := s.call(http.MethodGet, path, nil)
		ts.Check(err)
		if code != http.StatusOK {
			ts.Fatalf("GET %s: status %d\n%s", path, code, body)
		}
		return body
	}
	body := get("/1.0/list-queue")
	var q struct{ Queue []string }
	ts.Check(json.Unmarshal(body, &q))
	out := ts.Stdout()
	fmt.Fprintf(out, "%s", body)
	for _, p := range q.Queue {
		fmt.Fprintf(out, "%s", get("/1.0/lorry/"+p))
	}
}

// --- CONFGIT and processes of jobs ---

func cmdConfgitCommit(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "confgit-commit")
	amend := len(args) > 0 && args[0] == "-amend"
	if amend {
		args = args[1:]
	}
	if len(args) != 1 {
		ts.Fatalf("usage: confgit-commit [-amend] MESSAGE")
	}
	dir := filepath.Join(ts.Getenv("WORK"), "confgit")
	git := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(slices.Clone(gitEnv), "PATH="+ts.Getenv("PATH"), "HOME="+ts.Getenv("WORK"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			ts.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	ts.Check(os.MkdirAll(dir, 0o755))
	if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
		git("init", "-q", "-b", "master")
	}
	git("add", "-A")
	if amend {
		git("commit", "-q", "--allow-empty", "--amend", "-m", args[0])
	} else {
		git("commit", "-q", "--allow-empty", "-m", args[0])
	}
	ts.Setenv("COMMIT", git("rev-parse", "HEAD"))
}

func cmdWaitDead(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "wait-dead")
	if len(args) != 1 {
		ts.Fatalf("usage: wait-dead PIDFILE")
	}
	pid := readPidFile(ts, args[0])
	deadline := time.Now().Add(waitLimit)
	for alive(pid) {
		if time.Now().After(deadline) {
			ts.Fatalf("process %d is still alive after %v", pid, waitLimit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func cmdAlive(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: alive PIDFILE")
	}
	pid := readPidFile(ts, args[0])
	if alive(pid) == neg {
		ts.Fatalf("process %d: alive is %v", pid, !neg)
	}
}

func readPidFile(ts *testscript.TestScript, name string) int {
	data, err := os.ReadFile(ts.MkAbs(name))
	ts.Check(err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	ts.Check(err)
	return pid
}

// procState is the state letter of pid in /proc, or 0 if there is none.
func procState(pid int) byte {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The state follows the command name, which is in parentheses.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return 0
	}
	return stat[i+2]
}

func stopped(pid int) bool { return procState(pid) == 'T' }

// alive reports whether pid runs; a zombie waiting for a parent that does
// not reap it counts as dead.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	st := procState(pid)
	return st != 0 && st != 'Z' && st != 'X'
}

// --- upstream servers ---

func gitHandler(root string) (http.Handler, error) { return githttp.Handler(root) }

// lfsHandler serves the git repositories under root, as git-serve does,
// with an LFS server beside them. Its objects come from lfs-object.
func lfsHandler(root string) (http.Handler, error) {
	h, err := githttp.Handler(root)
	if err != nil {
		return nil, err
	}
	return githttp.NewLFS(h), nil
}

// cmdLFSObject serves the content of FILE as an LFS object of the server
// that lfs-serve started, and writes its pointer file to POINTER.
func cmdLFSObject(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "lfs-object")
	if len(args) != 2 {
		ts.Fatalf("usage: lfs-object FILE POINTER")
	}
	var lfs *githttp.LFS
	for _, srv := range state(ts).servers {
		if l, ok := srv.Config.Handler.(*githttp.LFS); ok {
			lfs = l
		}
	}
	if lfs == nil {
		ts.Fatalf("lfs-object: no lfs-serve server")
	}
	_, pointer := lfs.Add([]byte(ts.ReadFile(args[0])))
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(pointer), 0o644))
}

func fileHandler(root string) (http.Handler, error) { return http.FileServer(http.Dir(root)), nil }

// cmdServe starts an HTTP server of what handler makes of ROOT and sets
// the variable envVar to its URL.
func cmdServe(name, envVar string, handler func(root string) (http.Handler, error)) func(ts *testscript.TestScript, neg bool, args []string) {
	return func(ts *testscript.TestScript, neg bool, args []string) {
		noNeg(ts, neg, name)
		if len(args) != 1 {
			ts.Fatalf("usage: %s ROOT", name)
		}
		root := ts.MkAbs(args[0])
		if info, err := os.Stat(root); err != nil || !info.IsDir() {
			ts.Fatalf("%s: %s is not a directory", name, args[0])
		}
		h, err := handler(root)
		ts.Check(err)
		// The port stays held after serve-stop, so that its connections
		// are refused rather than reaching a server started meanwhile.
		port, err := heldport.New()
		ts.Check(err)
		ts.Defer(func() { port.Close() })
		ln, err := port.Listen()
		ts.Check(err)
		srv := httptest.NewUnstartedServer(h)
		srv.Listener.Close()
		srv.Listener = ln
		srv.Start()
		state(ts).servers[srv.URL] = srv
		ts.Defer(srv.Close)
		ts.Setenv(envVar, srv.URL)
	}
}

func cmdServeStop(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "serve-stop")
	if len(args) != 1 {
		ts.Fatalf("usage: serve-stop VAR")
	}
	s := state(ts)
	u := ts.Getenv(args[0])
	srv := s.servers[u]
	if srv == nil {
		ts.Fatalf("$%s (%q) is not the URL of a server of this script", args[0], u)
	}
	delete(s.servers, u)
	srv.Close()
}

func cmdEnvsubst(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "envsubst")
	if len(args) == 0 {
		ts.Fatalf("usage: envsubst FILE...")
	}
	for _, name := range args {
		file := ts.MkAbs(name)
		data, err := os.ReadFile(file)
		ts.Check(err)
		var missing []string
		out := os.Expand(string(data), func(k string) string {
			v := ts.Getenv(k)
			if v == "" {
				missing = append(missing, k)
			}
			return v
		})
		if len(missing) > 0 {
			ts.Fatalf("envsubst %s: no value for %s", name, strings.Join(missing, ", "))
		}
		ts.Check(os.WriteFile(file, []byte(out), 0o644))
	}
}

func cmdNextSecond(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "next-second")
	if len(args) != 0 {
		ts.Fatalf("usage: next-second")
	}
	start := time.Now()
	deadline := start.Add(waitLimit)
	for time.Now().Unix() <= start.Unix() {
		if time.Now().After(deadline) {
			ts.Fatalf("the wall clock did not move past %v within %v", start.Unix(), waitLimit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// --- fake Upstream and Downstream Hosts ---

// fakeHost is what the scripts do to a fake of hoststest, whichever API
// it answers.
type fakeHost interface {
	add(path, description, branch string, private bool) error
	addMany(group string, n int) error
	remove(path string) error
	fail(status int)
	// changes lists the calls that created or edited something.
	changes() ([]string, error)
}

var fakeNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// cmdFakeHost starts a fake of kind: gitlab, gitea or github.
func cmdFakeHost(kind string) func(ts *testscript.TestScript, neg bool, args []string) {
	return func(ts *testscript.TestScript, neg bool, args []string) {
		cmd := "fake-" + kind
		noNeg(ts, neg, cmd)
		usage := cmd + " NAME [-token T] [-servegit]"
		if kind == "github" {
			usage = cmd + " NAME [-token T]"
		}
		if len(args) < 1 || !fakeNamePattern.MatchString(args[0]) {
			ts.Fatalf("usage: %s (NAME as in a variable name)", usage)
		}
		name := args[0]
		var token string
		var serveGit bool
		for rest := args[1:]; len(rest) > 0; rest = rest[1:] {
			switch {
			case rest[0] == "-token" && len(rest) > 1:
				token, rest = rest[1], rest[1:]
			case rest[0] == "-servegit" && kind != "github":
				serveGit = true
			default:
				ts.Fatalf("usage: %s", usage)
			}
		}
		s := state(ts)
		if s.fakes[name] != nil {
			ts.Fatalf("%s: there is a fake named %s already", cmd, name)
		}
		// The fakes stop, and their repositories go, when the script's
		// own test ends: right after the script.
		tb, ok := s.t.(testing.TB)
		if !ok {
			ts.Fatalf("%s: the script runs outside a Go test", cmd)
		}
		var base, host, api string
		switch kind {
		case "gitlab":
			f := hoststest.NewGitLab(tb, hoststest.GitLabOptions{Token: token, ServeGit: serveGit})
			s.fakes[name] = fakeGitLab{f}
			base, host, api = f.URL(), f.Host(), f.APIURL()
		case "gitea":
			f := hoststest.NewGitea(tb, hoststest.GiteaOptions{Token: token, ServeGit: serveGit})
			s.fakes[name] = fakeGitea{f}
			base, host, api = f.URL(), f.Host(), f.APIURL()
		case "github":
			f := hoststest.NewGitHub(tb, hoststest.GitHubOptions{Token: token})
			s.fakes[name] = &fakeGitHub{f: f, repos: map[string][]hoststest.GitHubRepo{}}
			base, host, api = f.URL(), f.Host(), f.URL()
		}
		ts.Setenv(name+"_URL", base)
		ts.Setenv(name+"_HOST", host)
		ts.Setenv(name+"_API", api)
		if serveGit && token != "" {
			u, err := url.Parse(base)
			ts.Check(err)
			// GitLab and Gitea take the token as the password of any
			// user name.
			u.User = url.UserPassword("oauth2", token)
			ts.Setenv(name+"_AUTHURL", u.String())
		}
	}
}

func (s *scenario) fake(ts *testscript.TestScript, name string) fakeHost {
	f := s.fakes[name]
	if f == nil {
		ts.Fatalf("no fake host named %q was started", name)
	}
	return f
}

func cmdFakeRepo(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "fake-repo")
	private := len(args) > 0 && args[0] == "-private"
	if private {
		args = args[1:]
	}
	if len(args) < 2 || len(args) > 4 {
		ts.Fatalf("usage: fake-repo [-private] NAME PATH [DESCRIPTION [BRANCH]]")
	}
	var description string
	branch := "main"
	if len(args) > 2 {
		description = args[2]
	}
	if len(args) > 3 {
		branch = args[3]
	}
	ts.Check(state(ts).fake(ts, args[0]).add(args[1], description, branch, private))
}

func cmdFakeRepos(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "fake-repos")
	if len(args) != 3 {
		ts.Fatalf("usage: fake-repos NAME GROUP N")
	}
	n, err := strconv.Atoi(args[2])
	if err != nil || n < 1 {
		ts.Fatalf("fake-repos: %q is not a positive number", args[2])
	}
	ts.Check(state(ts).fake(ts, args[0]).addMany(args[1], n))
}

func cmdFakeRemove(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "fake-remove")
	if len(args) != 2 {
		ts.Fatalf("usage: fake-remove NAME PATH")
	}
	ts.Check(state(ts).fake(ts, args[0]).remove(args[1]))
}

func cmdFakeFail(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "fake-fail")
	if len(args) != 2 {
		ts.Fatalf("usage: fake-fail NAME STATUS|ok")
	}
	status := 0
	if args[1] != "ok" {
		var err error
		status, err = strconv.Atoi(args[1])
		if err != nil || status < 400 || status > 599 {
			ts.Fatalf("fake-fail: %q is neither ok nor an error status", args[1])
		}
	}
	state(ts).fake(ts, args[0]).fail(status)
}

func cmdFakeChanges(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "fake-changes")
	want := 0
	if len(args) == 3 && args[0] == "-wait" {
		var err error
		if want, err = strconv.Atoi(args[1]); err != nil {
			ts.Fatalf("fake-changes: -wait %q is not a number", args[1])
		}
		args = args[2:]
	}
	if len(args) != 1 {
		ts.Fatalf("usage: fake-changes [-wait N] NAME")
	}
	f := state(ts).fake(ts, args[0])
	// Asked for even when nothing is printed, so that stdout is this
	// command's and not the last one's.
	out := ts.Stdout()
	deadline := time.Now().Add(waitLimit)
	for {
		changes, err := f.changes()
		ts.Check(err)
		if len(changes) >= want {
			for _, c := range changes {
				fmt.Fprintln(out, c)
			}
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("fake-changes: %d changes after %v, want %d:\n%s", len(changes), waitLimit, want, strings.Join(changes, "\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// splitRepoPath splits PATH into its group (or owner) and its name; an
// owner has one segment unless nested groups are allowed.
func splitRepoPath(path string, nested bool) (group, name string, err error) {
	i := strings.LastIndexByte(path, '/')
	if i <= 0 || i == len(path)-1 || (!nested && strings.Contains(path[:i], "/")) {
		if nested {
			return "", "", fmt.Errorf("repository path %q: want GROUP[/SUBGROUP...]/NAME", path)
		}
		return "", "", fmt.Errorf("repository path %q: want OWNER/NAME", path)
	}
	return path[:i], path[i+1:], nil
}

type fakeGitLab struct{ f *hoststest.GitLab }

func (g fakeGitLab) add(path, description, branch string, private bool) error {
	ns, name, err := splitRepoPath(path, true)
	if err != nil {
		return err
	}
	if _, ok := g.f.Project(path); ok {
		return fmt.Errorf("GitLab project %s exists already", path)
	}
	vis := "public"
	if private {
		vis = "private"
	}
	g.f.AddProject(hoststest.GitLabProject{Namespace: ns, Path: name, Description: description, DefaultBranch: branch, Visibility: vis})
	return nil
}

func (g fakeGitLab) addMany(group string, n int) error {
	ps := make([]hoststest.GitLabProject, n)
	for i := range ps {
		ps[i] = hoststest.GitLabProject{Namespace: group, Path: fmt.Sprintf("r%04d", i+1),
			Description: fmt.Sprintf("repository %d", i+1), DefaultBranch: "main", Visibility: "public"}
		if _, ok := g.f.Project(ps[i].FullPath()); ok {
			return fmt.Errorf("GitLab project %s exists already", ps[i].FullPath())
		}
	}
	g.f.AddProjects(ps)
	return nil
}

func (g fakeGitLab) remove(path string) error {
	if !g.f.RemoveProject(path) {
		return fmt.Errorf("there is no GitLab project %s", path)
	}
	return nil
}

func (g fakeGitLab) fail(status int)            { g.f.SetFail(status) }
func (g fakeGitLab) changes() ([]string, error) { return g.f.Changes(), nil }

type fakeGitea struct{ f *hoststest.Gitea }

func (g fakeGitea) add(path, description, branch string, private bool) error {
	owner, name, err := splitRepoPath(path, false)
	if err != nil {
		return err
	}
	if _, ok := g.f.Repo(owner, name); ok {
		return fmt.Errorf("Gitea repository %s exists already", path)
	}
	g.f.AddRepo(hoststest.GiteaRepo{Owner: owner, Name: name, Description: description, DefaultBranch: branch, Private: private})
	return nil
}

func (g fakeGitea) addMany(owner string, n int) error {
	rs := make([]hoststest.GiteaRepo, n)
	for i := range rs {
		rs[i] = hoststest.GiteaRepo{Owner: owner, Name: fmt.Sprintf("r%04d", i+1),
			Description: fmt.Sprintf("repository %d", i+1), DefaultBranch: "main"}
		if _, ok := g.f.Repo(owner, rs[i].Name); ok {
			return fmt.Errorf("Gitea repository %s exists already", rs[i].FullName())
		}
	}
	g.f.AddRepos(rs)
	return nil
}

func (g fakeGitea) remove(path string) error {
	owner, name, err := splitRepoPath(path, false)
	if err != nil {
		return err
	}
	if !g.f.RemoveRepo(owner, name) {
		return fmt.Errorf("there is no Gitea repository %s", path)
	}
	return nil
}

func (g fakeGitea) fail(status int)            { g.f.SetFail(status) }
func (g fakeGitea) changes() ([]string, error) { return g.f.Changes(), nil }

// fakeGitHub keeps the repositories of each organisation, since the fake
// GitHub takes an organisation's whole list at once.
type fakeGitHub struct {
	f     *hoststest.GitHub
	repos map[string][]hoststest.GitHubRepo
}

func (g *fakeGitHub) set(owner string, repos []hoststest.GitHubRepo) {
	g.repos[owner] = repos
	g.f.AddOrg(owner, repos)
}

func (g *fakeGitHub) add(path, description, branch string, private bool) error {
	owner, name, err := splitRepoPath(path, false)
	if err != nil {
		return err
	}
	if private {
		return errors.New("the fake GitHub has public repositories only")
	}
	if slices.ContainsFunc(g.repos[owner], func(r hoststest.GitHubRepo) bool { return r.Name == name }) {
		return fmt.Errorf("GitHub repository %s exists already", path)
	}
	g.set(owner, append(slices.Clone(g.repos[owner]), hoststest.GitHubRepo{Name: name, Description: description, DefaultBranch: branch}))
	return nil
}

func (g *fakeGitHub) addMany(owner string, n int) error {
	repos := slices.Clone(g.repos[owner])
	for i := range n {
		name := fmt.Sprintf("r%04d", i+1)
		if slices.ContainsFunc(repos, func(r hoststest.GitHubRepo) bool { return r.Name == name }) {
			return fmt.Errorf("GitHub repository %s/%s exists already", owner, name)
		}
		repos = append(repos, hoststest.GitHubRepo{Name: name, Description: fmt.Sprintf("repository %d", i+1), DefaultBranch: "main"})
	}
	g.set(owner, repos)
	return nil
}

func (g *fakeGitHub) remove(path string) error {
	owner, name, err := splitRepoPath(path, false)
	if err != nil {
		return err
	}
	repos := slices.DeleteFunc(slices.Clone(g.repos[owner]), func(r hoststest.GitHubRepo) bool { return r.Name == name })
	if len(repos) == len(g.repos[owner]) {
		return fmt.Errorf("there is no GitHub repository %s", path)
	}
	g.set(owner, repos)
	return nil
}

func (g *fakeGitHub) fail(status int) { g.f.SetFail(status) }

func (g *fakeGitHub) changes() ([]string, error) {
	return nil, errors.New("the fake GitHub is an Upstream Host only: nothing is created on it")
}
