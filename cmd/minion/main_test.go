package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"lorrycontroller.dev/lc/proc"
	"lorrycontroller.dev/lc/seccomptest"
)

// mainEnv makes the test binary run main, so tests can run the real minion
// (built with the race detector when the tests are).
const mainEnv = "LORRY_MINION_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) == "1" {
		if os.Getenv(seccomptest.Env) == "1" {
			// As under the unit's RestrictSUIDSGID=, where there is a
			// filter for this machine.
			if err := seccomptest.Restrict(); err != nil && !errors.Is(err, seccomptest.ErrUnsupported) {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(3)
			}
		}
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseArgs(t *testing.T) {
	defaults := Config{
		WebappURLs:     []string{"http://127.0.0.1:12765"},
		Name:           defaultName(),
		Sleep:          10 * time.Second,
		UpdateInterval: 5 * time.Second,
		KillGrace:      10 * time.Second,
		LorryCmd:       defaultLorryCmd(),
		WorkingArea:    "/var/lib/lorry-controller/work",
		RuntimeCache:   "/var/lib/lorry-controller/work/runtimes",
		KeepUnused:     72 * time.Hour,
		LogLevel:       "info",
		Kinds:          "lorry,scraper",
	}
	with := func(change func(*Config)) Config {
		c := defaults
		change(&c)
		return c
	}
	tests := []struct {
		name    string
		args    []string
		config  string // contents of a --config file, added to args when set
		want    Config
		wantErr string
	}{
		{name: "defaults", want: defaults},
		{
			name: "flags",
			args: []string{"--webapp-url", "http://webapp:8080", "--name", "box-1", "--sleep", "1m", "--update-interval", "500ms",
				"--kill-grace", "0s", "--lorry-cmd", "/opt/lorry", "--working-area", "/srv/work", "--once", "--log-level", "debug"},
			want: Config{WebappURLs: []string{"http://webapp:8080"}, Name: "box-1", Sleep: time.Minute, UpdateInterval: 500 * time.Millisecond,
				KillGrace: 0, LorryCmd: "/opt/lorry", WorkingArea: "/srv/work", Once: true,
				RuntimeCache: "/srv/work/runtimes", KeepUnused: 72 * time.Hour, LogLevel: "debug", Kinds: "lorry,scraper"},
		},
		{
			name: "config file",
			config: `# minion settings
[config]
webapp-url = http://webapp:1234
name = box-2
; durations in Go syntax
sleep = 2s
update_interval = 3s
kill-grace=4s
lorry-cmd = /usr/local/bin/lorry
working-area = /srv/lorry work
once = true
log-level = warning
`,
			want: Config{WebappURLs: []string{"http://webapp:1234"}, Name: "box-2", Sleep: 2 * time.Second, UpdateInterval: 3 * time.Second,
				KillGrace: 4 * time.Second, LorryCmd: "/usr/local/bin/lorry", WorkingArea: "/srv/lorry work", Once: true,
				RuntimeCache: "/srv/lorry work/runtimes", KeepUnused: 72 * time.Hour, LogLevel: "warning", Kinds: "lorry,scraper"},
		},
		{
			name:   "runtimes",
			args:   []string{"--pip-arg", "--index-url", "--pip-arg", "https://pypi.internal/simple"},
			config: "runtime-cache = /srv/runtimes\nkeep-unused = 24h\npip-arg = --no-index\n",
			want: with(func(c *Config) {
				c.RuntimeCache, c.KeepUnused, c.PipArgs = "/srv/runtimes", 24*time.Hour, []string{"--index-url", "https://pypi.internal/simple"}
			}),
		},
		{
			name:   "job env",
			args:   []string{"--job-env", "TZDIR"},
			config: "job-env = HTTPS_PROXY\njob-env = NO_PROXY\n",
			want:   with(func(c *Config) { c.JobEnv = []string{"TZDIR"} }),
		},
		{
			name:   "job env in the file",
			config: "job-env = HTTPS_PROXY\njob-env = NO_PROXY\n",
			want:   with(func(c *Config) { c.JobEnv = []string{"HTTPS_PROXY", "NO_PROXY"} }),
		},
		{
			name:   "git config",
			config: "git-config = /etc/lorry-controller/jobs.gitconfig\n",
			want:   with(func(c *Config) { c.GitConfig = "/etc/lorry-controller/jobs.gitconfig" }),
		},
		{name: "negative keep-unused", args: []string{"--keep-unused", "-1h"}, wantErr: "--keep-unused"},
		{
			name:   "command line wins",
			args:   []string{"--name", "from-flag", "--sleep", "7s"},
			config: "name = from-file\nsleep = 1s\nkill-grace = 3s\n",
			want:   with(func(c *Config) { c.Name, c.Sleep, c.KillGrace = "from-flag", 7*time.Second, 3*time.Second }),
		},
		{name: "no header", config: "name = bare\n", want: with(func(c *Config) { c.Name = "bare" })},
		{name: "unknown key", config: "[config]\nwebapp-hots = x\n", wantErr: `:2: unknown key "webapp-hots"`},
		{
			name: "original minion.conf",
			config: `[config]
log = syslog
log-level = debug
webapp-host = webapp.example
webapp-port = 8080
webapp-timeout = 3600
sleep = 30
`,
			want: with(func(c *Config) {
				c.WebappURLs, c.Sleep, c.LogLevel = []string{"http://webapp.example:8080"}, 30*time.Second, "debug"
			}),
		},
		{name: "original port alone", config: "webapp-port = 12766\n", want: with(func(c *Config) { c.WebappURLs = []string{"http://127.0.0.1:12766"} })},
		{name: "webapp-url wins over the original keys", args: []string{"--webapp-url", "https://w"}, config: "webapp-host = x\n",
			want: with(func(c *Config) { c.WebappURLs = []string{"https://w"} })},
		{name: "bad original port", config: "webapp-port = http\n", wantErr: `:1: webapp-port: "http" is not a port number`},
		{name: "config in config", config: "config = other\n", wantErr: `unknown key "config"`},
		{name: "bad duration in file", config: "sleep = soon\n", wantErr: ":1: sleep:"},
		{name: "other section", config: "[other]\nname = x\n", wantErr: "unknown section [other]"},
		{name: "no equals", config: "name box\n", wantErr: "want key = value"},
		{name: "bad duration flag", args: []string{"--update-interval", "5"}, wantErr: "invalid value"},
		{name: "zero sleep", args: []string{"--sleep", "0s"}, wantErr: "--sleep 0s: want a positive duration"},
		{name: "negative grace", args: []string{"--kill-grace", "-1s"}, wantErr: "--kill-grace"},
		{name: "bad log level", args: []string{"--log-level", "loud"}, wantErr: "--log-level"},
		{name: "bad url", args: []string{"--webapp-url", "127.0.0.1:12765"}, wantErr: "--webapp-url"},
		{name: "empty name", args: []string{"--name", ""}, wantErr: "--name must not be empty"},
		{name: "lorries only", args: []string{"--kinds", "lorry"}, want: with(func(c *Config) { c.Kinds = "lorry" })},
		{name: "kinds in the file", config: "kinds = scraper\n", want: with(func(c *Config) { c.Kinds = "scraper" })},
		{name: "unknown kind", args: []string{"--kinds", "lorry,tarball"}, wantErr: `"tarball" is neither lorry nor scraper`},
		{name: "no kind", args: []string{"--kinds", ""}, wantErr: "--kinds"},
		{name: "name with a newline", args: []string{"--name", "m1\nforged"}, wantErr: "--name: minion name"},
		{name: "name with NUL", args: []string{"--name", "m1\x00"}, wantErr: "--name: minion name"},
		{name: "name too long", args: []string{"--name", strings.Repeat("m", 65)}, wantErr: "longer than 64"},
		{name: "name with a dot", args: []string{"--name", "build01.example.org-3"},
			want: with(func(c *Config) { c.Name = "build01.example.org-3" })},
		{name: "extra argument", args: []string{"job.lorry"}, wantErr: "unexpected argument"},
		{name: "missing config file", args: []string{"--config", "/nonexistent/minion.conf"}, wantErr: "read config"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			if tt.config != "" {
				tt.want.ConfigFile = writeFile(t, "minion.conf", tt.config)
				args = append([]string{"--config", tt.want.ConfigFile}, args...)
			}
			var out bytes.Buffer
			got, err := parseArgs(args, &out)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseArgs(%q): got error %v, want one containing %q", args, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseArgs(%q): got error %v, want none", args, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("parseArgs(%q):\ngot  %+v\nwant %+v", args, got, tt.want)
			}
		})
	}
}

// TestParseWebappURLs gives several WEBAPPs by repeating --webapp-url, by
// separating them with commas, or both, on the command line and in the
// --config file.
func TestParseWebappURLs(t *testing.T) {
	const a, b, c = "http://webapp1:12765", "http://webapp2:12765", "https://webapp3.example/lc"
	tests := []struct {
		name    string
		args    []string
		config  string
		want    []string
		wantErr string
	}{
		{name: "default", want: []string{"http://127.0.0.1:12765"}},
		{name: "one", args: []string{"--webapp-url", a}, want: []string{a}},
		{name: "repeated", args: []string{"--webapp-url", a, "--webapp-url", b, "--webapp-url=" + c}, want: []string{a, b, c}},
		{name: "comma-separated", args: []string{"--webapp-url", a + "," + b + " , " + c}, want: []string{a, b, c}},
		{name: "both", args: []string{"--webapp-url", a + "," + b, "--webapp-url", c}, want: []string{a, b, c}},
		{name: "given twice counts once", args: []string{"--webapp-url", a + "," + b, "--webapp-url", a}, want: []string{a, b}},
		{name: "empty items", args: []string{"--webapp-url", "," + a + ",,"}, want: []string{a}},
		{name: "repeated in the file", config: "webapp-url = " + a + "\nwebapp-url = " + b + "\n", want: []string{a, b}},
		{name: "comma-separated in the file", config: "webapp_url = " + a + ", " + b + "\nwebapp-url = " + c + "\n", want: []string{a, b, c}},
		{name: "command line wins over the file", args: []string{"--webapp-url", c}, config: "webapp-url = " + a + "\nwebapp-url = " + b + "\n",
			want: []string{c}},
		{name: "original keys give way to the file's list", config: "webapp-host = other\nwebapp-url = " + a + "," + b + "\n", want: []string{a, b}},
		{name: "one bad among several", args: []string{"--webapp-url", a + ",webapp2:12765"}, wantErr: `--webapp-url "webapp2:12765": want an http or https URL`},
		{name: "none", args: []string{"--webapp-url", " , "}, wantErr: "--webapp-url: want at least one"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			if tt.config != "" {
				args = append([]string{"--config", writeFile(t, "minion.conf", tt.config)}, args...)
			}
			var out bytes.Buffer
			cfg, err := parseArgs(args, &out)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseArgs(%q): got error %v, want one containing %q", args, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseArgs(%q): got error %v, want none", args, err)
			}
			if !slices.Equal(cfg.WebappURLs, tt.want) {
				t.Errorf("parseArgs(%q): got webapp URLs %q, want %q", args, cfg.WebappURLs, tt.want)
			}
			if out.Len() > 0 {
				t.Errorf("parseArgs(%q): got output %q, want none", args, out.String())
			}
			if got := minionConfig(cfg, "h", "", nil, nil, nil).WebappURLs; !slices.Equal(got, tt.want) {
				t.Errorf("minion config: got webapp URLs %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseArgsHelp(t *testing.T) {
	var out bytes.Buffer
	_, err := parseArgs([]string{"--help"}, &out)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("got error %v, want %v", err, flag.ErrHelp)
	}
	for _, f := range []string{"-webapp-url", "-name", "-sleep", "-update-interval", "-kill-grace", "-lorry-cmd", "-working-area", "-config", "-once",
		"-runtime-cache", "-pip-arg", "-keep-unused", "-log-level", "lorry-controller-minion gc"} {
		if !strings.Contains(out.String(), f) {
			t.Errorf("help: got %q, want it to list %s", out.String(), f)
		}
	}
}

func TestDefaultLorryCmd(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	beside := filepath.Join(filepath.Dir(exe), "lorry")
	if _, err := os.Stat(beside); err == nil {
		t.Skipf("%s exists; cannot test the PATH fallback", beside)
	}
	if got := defaultLorryCmd(); got != "lorry" {
		t.Errorf("without lorry beside the minion: got %q, want %q", got, "lorry")
	}
	if err := os.WriteFile(beside, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Skipf("cannot write beside the test binary: %v", err)
	}
	defer os.Remove(beside)
	if got := defaultLorryCmd(); got != beside {
		t.Errorf("with lorry beside the minion: got %q, want %q", got, beside)
	}
}

// webapp is a small stand-in for the WEBAPP that hands out one job.
type webapp struct {
	srv     *httptest.Server
	started chan struct{} // closed when the job's output says "started"

	mu      sync.Mutex
	polls   int
	updates []map[string]string
	auths   []string // the Authorization header of every request

	// killOnStart, when set, answers the updates after "started" with
	// a kill, as the WEBAPP does after stop-job.
	killOnStart atomic.Bool
}

func newWebapp(t *testing.T, job string) *webapp {
	w := &webapp{started: make(chan struct{})}
	var once sync.Once
	mux := http.NewServeMux()
	mux.HandleFunc("POST /1.0/give-me-job", func(rw http.ResponseWriter, r *http.Request) {
		w.mu.Lock()
		w.polls++
		n := w.polls
		w.auths = append(w.auths, r.Header.Get("Authorization"))
		w.mu.Unlock()
		if n > 1 || job == "" {
			rw.WriteHeader(http.StatusNoContent)
			return
		}
		fmt.Fprint(rw, job)
	})
	mux.HandleFunc("POST /1.0/job-update", func(rw http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			t.Error(err)
		}
		u := make(map[string]string)
		for k := range r.PostForm {
			u[k] = r.PostForm.Get(k)
		}
		w.mu.Lock()
		w.updates = append(w.updates, u)
		w.auths = append(w.auths, r.Header.Get("Authorization"))
		w.mu.Unlock()
		if strings.Contains(u["stdout"], "started") {
			once.Do(func() { close(w.started) })
		}
		select {
		case <-w.started:
			if w.killOnStart.Load() {
				fmt.Fprint(rw, `{"kill": true}`)
				return
			}
		default:
		}
		fmt.Fprint(rw, `{"kill": false}`)
	})
	mux.HandleFunc("GET /1.0/runtime/", func(rw http.ResponseWriter, r *http.Request) {
		tw := tar.NewWriter(rw)
		tw.WriteHeader(&tar.Header{Name: "requirements.txt", Typeflag: tar.TypeReg, Mode: 0o644})
		tw.Close()
	})
	w.srv = httptest.NewServer(mux)
	t.Cleanup(w.srv.Close)
	return w
}

func (w *webapp) snapshot() (int, []map[string]string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.polls, append([]map[string]string(nil), w.updates...)
}

// minionCmd runs the real minion against w.
func minionCmd(t *testing.T, w *webapp, lorry string, extra ...string) (*exec.Cmd, *bytes.Buffer) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{
		"--webapp-url", w.srv.URL,
		"--name", "test-minion",
		"--lorry-cmd", lorry,
		"--working-area", filepath.Join(t.TempDir(), "work"),
		"--sleep", "20ms",
		"--update-interval", "20ms",
		"--kill-grace", "5s",
	}, extra...)
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), mainEnv+"=1", "GORACE=atexit_sleep_ms=0")
	var logs bytes.Buffer
	cmd.Stdout = &logs
	cmd.Stderr = &logs
	return cmd, &logs
}

func waitExit(t *testing.T, cmd *exec.Cmd, logs *bytes.Buffer) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode()
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("minion did not exit; its log:\n%s", logs)
		return -1
	}
}

// killWatchdogs kills the job watchdogs of the minion of pid, which
// would otherwise kill the job as the minion dies.
func killWatchdogs(t *testing.T, pid int) {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	killed := 0
	for _, e := range entries {
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		args := strings.Split(string(cmdline), "\x00")
		// The parent's pid is the second field after the command name.
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) && len(args) > 1 && args[1] == proc.WatchdogArg {
			n, _ := strconv.Atoi(e.Name())
			if err := syscall.Kill(n, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed++
		}
	}
	if killed == 0 {
		t.Fatal("the minion runs no watchdog")
	}
}

func gone(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && (s[i+2] == 'Z' || s[i+2] == 'X')
}

func TestHelpExitsZero(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "--help")
	cmd.Env = append(os.Environ(), mainEnv+"=1", "GORACE=atexit_sleep_ms=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("--help: got %v, want exit 0; output:\n%s", err, out)
	}
	if !strings.Contains(string(out), "-webapp-url") {
		t.Errorf("--help: got %q, want the flags listed", out)
	}
}

// TestSigterm stops the real minion while its job runs: the job must be
// killed with SIGTERM and reported, and the minion must exit 0.
func TestSigterm(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	lorry := writeFile(t, "lorry", "#!/bin/sh\necho $$ > '"+pidFile+"'\necho started\nsleep 1000\n")
	w := newWebapp(t, `{"job_id": 21, "path": "delta/sig", "kind": "lorry", "text": "{}", "timeout": 3600, "push_url": ""}`)
	cmd, logs := minionCmd(t, w, lorry)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()

	select {
	case <-w.started:
	case <-time.After(60 * time.Second):
		t.Fatalf("job did not start; minion log:\n%s", logs)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	job, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, cmd, logs); code != 0 {
		t.Errorf("minion exit code: got %d, want 0; log:\n%s", code, logs)
	}
	polls, updates := w.snapshot()
	if polls != 1 {
		t.Errorf("give-me-job requests: got %d, want 1", polls)
	}
	if len(updates) == 0 {
		t.Fatal("no job-update received")
	}
	final := updates[len(updates)-1]
	if final["exit"] != "143" || final["job_id"] != "21" {
		t.Errorf("final update: got job_id %s exit %s, want job_id 21 exit 143", final["job_id"], final["exit"])
	}
	if _, ok := final["disk_usage"]; !ok {
		t.Errorf("final update: got %v, want disk_usage", final)
	}
	if !gone(job) {
		t.Errorf("job process %d still runs after the minion exited", job)
	}
}

func TestOnce(t *testing.T) {
	tests := []struct {
		name       string
		job        string
		wantPolls  int
		wantUpdate string // exit of the final update; empty for none
	}{
		{name: "one job", job: `{"job_id": 30, "path": "delta/once", "kind": "lorry", "text": "{}"}`, wantPolls: 1, wantUpdate: "5"},
		{name: "nothing to do", job: "", wantPolls: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lorry := writeFile(t, "lorry", "#!/bin/sh\necho mirrored\nexit 5\n")
			w := newWebapp(t, tt.job)
			cmd, logs := minionCmd(t, w, lorry, "--once")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if code := waitExit(t, cmd, logs); code != 0 {
				t.Errorf("minion exit code: got %d, want 0; log:\n%s", code, logs)
			}
			polls, updates := w.snapshot()
			if polls != tt.wantPolls {
				t.Errorf("give-me-job requests: got %d, want %d", polls, tt.wantPolls)
			}
			var final string
			if len(updates) > 0 {
				final = updates[len(updates)-1]["exit"]
			}
			if final != tt.wantUpdate {
				t.Errorf("final exit: got %q, want %q", final, tt.wantUpdate)
			}
		})
	}
}

func TestOnceWebappDown(t *testing.T) {
	w := newWebapp(t, "")
	cmd, logs := minionCmd(t, w, "/bin/true", "--once")
	w.srv.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, cmd, logs); code != 1 {
		t.Errorf("minion exit code: got %d, want 1; log:\n%s", code, logs)
	}
}

// TestOnceSecondWebapp gives the minion two WEBAPPs, of which the first
// refuses connections: it gets its job through the second and reports it
// there.
func TestOnceSecondWebapp(t *testing.T) {
	lorry := writeFile(t, "lorry", "#!/bin/sh\necho mirrored\nexit 5\n")
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	w := newWebapp(t, `{"job_id": 31, "path": "delta/second", "kind": "lorry", "text": "{}"}`)
	cmd, logs := minionCmd(t, w, lorry, "--once")
	i := slices.Index(cmd.Args, "--webapp-url")
	cmd.Args[i+1] = down.URL + "," + w.srv.URL
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, cmd, logs); code != 0 {
		t.Errorf("minion exit code: got %d, want 0; log:\n%s", code, logs)
	}
	polls, updates := w.snapshot()
	if polls != 1 {
		t.Errorf("give-me-job requests: got %d, want 1", polls)
	}
	if len(updates) == 0 || updates[len(updates)-1]["exit"] != "5" {
		t.Errorf("job-updates: got %v, want a final one with exit 5", updates)
	}
	if !strings.Contains(logs.String(), "webapp does not answer; asking the next") {
		t.Errorf("log: got %q, want it to say the minion moved to the next WEBAPP", logs)
	}
}

// TestOnceSendsToken checks that the token of --token-file goes with every
// request, that a token file others can read is warned about (named by
// the flag or by minion.conf), and that the token is not logged, at debug
// level either.
func TestOnceSendsToken(t *testing.T) {
	lorry := writeFile(t, "lorry", "#!/bin/sh\necho mirrored\n")
	token := writeFile(t, "minion.token", "lct_minion\n")
	if err := os.Chmod(token, 0o644); err != nil {
		t.Fatal(err)
	}
	w := newWebapp(t, `{"job_id": 31, "path": "delta/once", "kind": "lorry", "text": "{}"}`)
	cmd, logs := minionCmd(t, w, lorry, "--once", "--token-file", token)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, cmd, logs); code != 0 {
		t.Fatalf("minion exit code: got %d, want 0; log:\n%s", code, logs)
	}
	w.mu.Lock()
	auths := append([]string(nil), w.auths...)
	w.mu.Unlock()
	if len(auths) < 2 {
		t.Fatalf("the WEBAPP got %d requests; want give-me-job and job-update", len(auths))
	}
	for i, a := range auths {
		if a != "Bearer lct_minion" {
			t.Errorf("request %d: Authorization %q; want Bearer lct_minion", i, a)
		}
	}
	if !strings.Contains(logs.String(), "open to every user (mode 644)") {
		t.Errorf("no warning about the token file open to others; log:\n%s", logs)
	}
	// The same at debug level, with the file named by minion.conf: the
	// warning, and the token nowhere in the log.
	conf := writeFile(t, "minion.conf", "[config]\ntoken-file = "+token+"\n")
	cmd, logs = minionCmd(t, w, lorry, "--once", "--config", conf, "--log-level", "debug")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, cmd, logs); code != 0 {
		t.Fatalf("minion with token-file in minion.conf: exit %d, want 0; log:\n%s", code, logs)
	}
	if !strings.Contains(logs.String(), "open to every user (mode 644)") || strings.Contains(logs.String(), "lct_minion") {
		t.Errorf("token-file of minion.conf at debug level: want the warning and no token; log:\n%s", logs)
	}
	cmd, logs = minionCmd(t, w, lorry, "--once", "--token-file", filepath.Join(t.TempDir(), "missing"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, cmd, logs); code != 1 || !strings.Contains(logs.String(), "--token-file") {
		t.Errorf("missing token file: exit %d; want 1 and why; log:\n%s", code, logs)
	}
}

// TestOnceLogLevel runs the real minion with nothing to do: at the default
// level it says that it started, at warn it says nothing of the kind.
func TestOnceLogLevel(t *testing.T) {
	for _, tt := range []struct {
		name  string
		args  []string
		quiet bool
	}{
		{name: "default", quiet: false},
		{name: "warn", args: []string{"--log-level", "warn"}, quiet: true},
		{name: "the original's warning", args: []string{"--log-level", "warning"}, quiet: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newWebapp(t, "")
			cmd, logs := minionCmd(t, w, "/bin/true", append([]string{"--once"}, tt.args...)...)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if code := waitExit(t, cmd, logs); code != 0 {
				t.Fatalf("minion exit code: got %d, want 0; log:\n%s", code, logs)
			}
			if said := strings.Contains(logs.String(), "minion started"); said == tt.quiet {
				t.Errorf("log says \"minion started\": %v; want %v; log:\n%s", said, !tt.quiet, logs)
			}
		})
	}
}

// TestOriginalConfigWarns: the warnings about an original minion.conf go
// to the output, each naming the file and line.
func TestOriginalConfigWarns(t *testing.T) {
	conf := writeFile(t, "minion.conf", "[config]\nlog = syslog\nwebapp-host = localhost\nwebapp-timeout = 3600\n")
	var out bytes.Buffer
	cfg, err := parseArgs([]string{"--config", conf}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"http://localhost:12765"}; !slices.Equal(cfg.WebappURLs, want) {
		t.Errorf("webapp-url: got %q, want %q", cfg.WebappURLs, want)
	}
	for _, want := range []string{conf + ":2: log is ignored", conf + ":4: webapp-timeout is ignored"} {
		if !strings.Contains(out.String(), "lorry-controller-minion: warning: "+want) {
			t.Errorf("output %q lacks the warning %q", out.String(), want)
		}
	}
}

// TestInstalledConfigFile checks the minion.conf that make install puts in
// /etc: it is read without a warning, and it shows every flag.
func TestInstalledConfigFile(t *testing.T) {
	path := filepath.Join("..", "..", "etc", "minion.conf")
	var out bytes.Buffer
	if _, err := parseArgs([]string{"--config", path}, &out); err != nil || out.Len() > 0 {
		t.Fatalf("parse %s: %v %q", path, err, out.String())
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
	var usage bytes.Buffer
	parseArgs([]string{"--help"}, &usage)
	var all []string
	for _, line := range strings.Split(usage.String(), "\n") {
		if strings.HasPrefix(line, "  -") {
			all = append(all, strings.Fields(strings.TrimPrefix(line, "  -"))[0])
		}
	}
	if len(all) < 8 {
		t.Fatalf("found only flags %q in --help", all)
	}
	for _, name := range all {
		if name != "config" && !mentioned[name] {
			t.Errorf("%s does not mention %s", path, name)
		}
	}
}

// A job is given only its standard streams and what the minion hands it:
// none of the descriptors the minion itself inherited.
func TestJobSeesNoInheritedDescriptor(t *testing.T) {
	secret, err := os.Create(filepath.Join(t.TempDir(), "inherited"))
	if err != nil {
		t.Fatal(err)
	}
	defer secret.Close()
	out := filepath.Join(t.TempDir(), "fds")
	// The job's shell becomes ls, which lists its own descriptors: those
	// it was given, and the one it reads the listing through.
	lorry := writeFile(t, "lorry", "#!/bin/sh\nexec ls -l /proc/self/fd/ > "+out+"\n")
	w := newWebapp(t, `{"job_id": 31, "path": "delta/fds", "kind": "lorry", "text": "{}"}`)
	cmd, logs := minionCmd(t, w, lorry, "--once")
	cmd.ExtraFiles = []*os.File{secret}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, cmd, logs); code != 0 {
		t.Fatalf("minion exit code: got %d, want 0; log:\n%s", code, logs)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("the job listed no descriptors: %v; log:\n%s", err, logs)
	}
	if strings.Contains(string(data), secret.Name()) {
		t.Errorf("the job holds the minion's inherited descriptor:\n%s", data)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 3 || fields[0] == "total" {
			continue
		}
		// "lr-x------ 1 root root 64 date N -> target"
		i := slices.Index(fields, "->")
		if i < 1 {
			continue
		}
		fd, target := fields[i-1], strings.Join(fields[i+1:], " ")
		listing := strings.HasPrefix(target, "/proc/") && strings.HasSuffix(target, "/fd")
		// lorry's result: the minion's file, with no name.
		result := fd == "3" && strings.Contains(target, "/.jobs/") && strings.HasSuffix(target, " (deleted)")
		if n, err := strconv.Atoi(fd); err == nil && n > 2 && !listing && !result {
			t.Errorf("job has descriptor %s -> %s; want only 0, 1, 2, its result's and the listing's", fd, target)
		}
	}
}

// fakePython makes environments in no time: its venv copies it into the
// environment's bin, and its pip does nothing.
const fakePython = `#!/bin/sh
if [ "$1 $2" = "-m venv" ]; then
	mkdir -p "$3/bin" && cp "$0" "$3/bin/python"
fi
`

// scraperJob is a give-me-job answer for a scraper job running argv, in a
// runtime whose python is fakePython.
func scraperJob(t *testing.T, argv ...string) string {
	t.Helper()
	python := writeFile(t, "python", fakePython)
	b, err := json.Marshal(map[string]any{
		"job_id": 40, "path": "scrape/orphan", "kind": "scraper", "text": "{}", "timeout": 3600,
		"scraper": map[string]any{
			"runtime": map[string]string{"name": "rt", "version": "1.0", "id": strings.Repeat("1", 40), "python": python},
			"argv":    argv, "env": map[string]string{}, "config": []any{}, "fd_args": false,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// argValue is the value of flag in the arguments of cmd.
func argValue(t *testing.T, cmd *exec.Cmd, flag string) string {
	t.Helper()
	i := slices.Index(cmd.Args, flag)
	if i < 0 || i+1 >= len(cmd.Args) {
		t.Fatalf("no %s in %q", flag, cmd.Args)
	}
	return cmd.Args[i+1]
}

// runGCCmd runs the real lorry-controller-minion gc on the working area
// and returns what it printed.
func runGCCmd(t *testing.T, workingArea string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "gc", "--working-area", workingArea)
	cmd.Env = append(os.Environ(), mainEnv+"=1", "GORACE=atexit_sleep_ms=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gc: %v\n%s", err, out)
	}
	return string(out)
}

// waitGone waits until pid has exited.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !gone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A scraper that outlives its minion, killed outright, keeps its working
// directory: it inherited the directory's lock, so gc leaves the directory
// alone until the last of the job's processes has ended, which the minion
// started again sees to.
func TestGCKeepsOrphanedScraperWorkDir(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	w := newWebapp(t, scraperJob(t, "sh", "-c", "sleep 1000 & echo $! > "+pidFile+"; echo started; wait"))
	cmd, logs := minionCmd(t, w, "/bin/true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.started:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the scraper did not start; log:\n%s", logs)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })

	// The minion and its job's watchdog die at once, as a machine's
	// OOM killer might have them, leaving the child to the next start.
	killWatchdogs(t, cmd.Process.Pid)
	cmd.Process.Kill()
	cmd.Wait()
	if gone(pid) {
		t.Fatal("the scraper's child died with the minion; nothing to test")
	}
	area := argValue(t, cmd, "--working-area")
	dir := filepath.Join(area, "scrapers", "test-minion")
	out := runGCCmd(t, area)
	if want := "kept scraper working directory " + dir + ": in use\n"; !strings.Contains(out, want) {
		t.Errorf("gc while the scraper lives: got\n%s\nwant %q", out, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "cwd")); err != nil {
		t.Errorf("the running scraper's working directory: %v", err)
	}

	// The minion started again kills what is left of its job, though
	// that holds the working directory, and then starts.
	again, logs := minionCmd(t, w, "/bin/true", "--working-area", area, "--once")
	if err := again.Start(); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, again, logs); code != 0 {
		t.Fatalf("minion started again: exit code %d, want 0; log:\n%s", code, logs)
	}
	waitGone(t, pid)
	out = runGCCmd(t, area)
	if want := "removed scraper working directory " + dir + ": no minion holds it\n"; !strings.Contains(out, want) {
		t.Errorf("gc once the scraper ended: got\n%s\nwant %q", out, want)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("working directory after gc: got %v, want it removed", err)
	}
}

// A scraper whose env holds secrets, which it prints to its output and
// its error before it fails: the minion's log shows none of them, though
// the scraper's output reaches the WEBAPP.
func TestScraperEnvNotLogged(t *testing.T) {
	var printable strings.Builder
	for c := byte(' '); c <= '~'; c++ {
		printable.WriteByte(c)
	}
	secrets := map[string]string{"TOKEN": "glpat-S3cret-token", "PASS": "S3cret " + printable.String() + " é"}
	var answer map[string]any
	if err := json.Unmarshal([]byte(scraperJob(t, "sh", "-c", `echo "$TOKEN $PASS"; echo "error: $PASS" >&2; exit 3`)), &answer); err != nil {
		t.Fatal(err)
	}
	answer["scraper"].(map[string]any)["env"] = secrets
	job, err := json.Marshal(answer)
	if err != nil {
		t.Fatal(err)
	}
	w := newWebapp(t, string(job))
	cmd, logs := minionCmd(t, w, "/bin/true", "--once")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, cmd, logs); code != 0 {
		t.Fatalf("minion exit code: got %d, want 0; log:\n%s", code, logs)
	}
	stdout, _, exit := output(w)
	if exit != "3" || !strings.Contains(stdout, secrets["TOKEN"]) {
		t.Fatalf("scraper: exit %q, stdout %q; want exit 3 and its env printed; log:\n%s", exit, stdout, logs)
	}
	if i := strings.Index(logs.String(), "S3cret"); i >= 0 {
		t.Errorf("the minion's log shows a value of the scraper's env: %s", logs)
	}
}
