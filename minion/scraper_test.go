package minion

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"lorrycontroller.dev/lc/flock"
	"lorrycontroller.dev/lc/venv"
)

const testRuntimeID = "1111111111111111111111111111111111111111"

// fakePython makes environments in no time: its venv copies it into the
// environment's bin, its pip fails when requirements.txt asks for nosuch,
// and run otherwise it says it is the runtime's python.
const fakePython = `#!/bin/sh
if [ "$1 $2" = "-m venv" ]; then
	mkdir -p "$3/bin" && cp "$0" "$3/bin/python"
	exit
fi
if [ "$1 $2" = "-m pip" ]; then
	if grep -q nosuch requirements.txt; then
		echo "ERROR: No matching distribution found for nosuch" >&2
		exit 1
	fi
	exit 0
fi
echo "runtime python $*"
`

// tarOf is a tar of files, name to contents.
func tarOf(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, data := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(data))}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(data))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// newScraperMinion is newTestMinion with a runtime cache whose python is
// fakePython, and the runtime source requirements.
func newScraperMinion(t *testing.T, f *fakeWebapp, requirements string, change func(*Config)) (*Minion, Config, string) {
	t.Helper()
	python := filepath.Join(t.TempDir(), "python")
	if err := os.WriteFile(python, []byte(fakePython), 0o755); err != nil {
		t.Fatal(err)
	}
	f.runtimeTar = tarOf(t, map[string]string{"requirements.txt": requirements})
	m, cfg := newTestMinion(t, f, "lorry")
	cfg.Runtimes, _ = venv.New(venv.Config{Dir: filepath.Join(cfg.WorkingArea, "runtimes"), Logger: m.log})
	if change != nil {
		change(&cfg)
	}
	m = New(cfg, m.client, m.log)
	t.Cleanup(func() {
		if m.workDir != nil {
			m.workDir.Close()
		}
	})
	return m, cfg, python
}

type testConfig struct {
	Name    string `json:"name"`
	Path    string `json:"path"`
	Content []byte `json:"content"`
}

// scraperAnswer is a give-me-job answer for a scraper, shaped like the
// WEBAPP's.
func scraperAnswer(t *testing.T, id int64, python string, argv []string, env map[string]string, config []testConfig, fdArgs bool) string {
	t.Helper()
	if config == nil {
		config = []testConfig{}
	}
	a := map[string]any{
		"job_id": id, "path": "scrape/news", "kind": "scraper", "text": "{}", "timeout": 3600,
		"scraper": map[string]any{
			"runtime": map[string]string{"name": "news", "version": "1.0", "id": testRuntimeID, "python": python},
			"argv":    argv, "env": env, "config": config, "fd_args": fdArgs,
		},
	}
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// runScraperJob hands m one job and returns the updates the fake WEBAPP
// accepted.
func runScraperJob(t *testing.T, f *fakeWebapp, m *Minion, answer string) []request {
	t.Helper()
	before := len(f.delivered())
	f.giveMeJob = oneJob(answer)
	f.mu.Lock()
	f.reqs = slices.DeleteFunc(f.reqs, func(q request) bool { return q.Route == "give-me-job" })
	f.mu.Unlock()
	if ran, err := runOnce(t, t.Context(), m); !ran || err != nil {
		t.Fatalf("RunOnce: got %v, %v; want true, nil", ran, err)
	}
	updates := f.delivered()[before:]
	if len(updates) == 0 || updates[len(updates)-1].Form.Get("exit") == "no" {
		t.Fatalf("the job was not reported finished: %v", updates)
	}
	return updates
}

// runtimeBuilt is the runtime_built that the updates reported: it must be
// once.
func runtimeBuilt(t *testing.T, updates []request) string {
	t.Helper()
	var got []string
	for _, u := range updates {
		if v, ok := u.Form["runtime_built"]; ok {
			got = append(got, v[0])
			if _, ok := u.Form["runtime_build_seconds"]; !ok {
				t.Errorf("runtime_built without runtime_build_seconds: %v", u.Form)
			}
		}
	}
	if len(got) != 1 {
		t.Errorf("runtime_built: got %q, want it in one update", got)
		return ""
	}
	return got[0]
}

func finalExit(updates []request) string {
	return updates[len(updates)-1].Form.Get("exit")
}

// A scraper sees a clean environment: the minion's variables do not leak
// into it, but for TZ and those of --job-env.
func TestScraperEnvironment(t *testing.T) {
	t.Setenv("MINION_SECRET", "leaked")
	t.Setenv("PASS_ME", "passed")
	t.Setenv("TZ", "Europe/Paris")
	f := newFakeWebapp(t)
	m, cfg, python := newScraperMinion(t, f, "", func(c *Config) { c.JobEnv = []string{"PASS_ME", "UNSET_ONE"} })
	updates := runScraperJob(t, f, m, scraperAnswer(t, 3, python, []string{"env"},
		map[string]string{"API_TOKEN": "s3cret", "PATH": "/spec/may/not/move/it"}, nil, false))
	if got := finalExit(updates); got != "0" {
		t.Fatalf("exit: got %s, want 0; stderr %q", got, joined(updates, "stderr"))
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(joined(updates, "stdout")), "\n") {
		k, v, _ := strings.Cut(line, "=")
		got[k] = v
	}
	wd := filepath.Join(cfg.WorkingArea, "scrapers", testMinion)
	envDir := filepath.Join(cfg.WorkingArea, "runtimes", "news", "1.0", testRuntimeID)
	want := map[string]string{
		"API_TOKEN":                        "s3cret",
		"HOME":                             filepath.Join(wd, "home"),
		"LANG":                             "C.UTF-8",
		"LORRY_CONTROLLER_CONFIG_FDS":      "",
		"LORRY_CONTROLLER_JOB_ID":          "3",
		"LORRY_CONTROLLER_RUNTIME_LOCK_FD": "3",
		"LORRY_CONTROLLER_WORKDIR_LOCK_FD": "4",
		"PASS_ME":                          "passed",
		"PATH":                             envDir + "/bin:" + systemPath,
		"TZ":                               "Europe/Paris",
		"VIRTUAL_ENV":                      envDir,
	}
	if !strings.HasPrefix("LORRY_CONTROLLER_JOB="+got["LORRY_CONTROLLER_JOB"], "LORRY_CONTROLLER_JOB=") || len(got["LORRY_CONTROLLER_JOB"]) != 32 {
		t.Errorf("job mark: got %q, want 32 hex digits", got["LORRY_CONTROLLER_JOB"])
	}
	delete(got, "LORRY_CONTROLLER_JOB")
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("environment:\ngot  %v\nwant %v", got, want)
	}
	if got := runtimeBuilt(t, updates); got != "true" {
		t.Errorf("runtime_built: got %q, want true", got)
	}
}

// Config files reach the scraper as pipes named by {config:NAME}: one
// larger than a pipe's buffer arrives whole, and one the scraper never
// reads holds up neither the job nor the minion. The usage lock of the
// runtime is open in the job; the job runs in the emptied cwd.
func TestScraperConfig(t *testing.T) {
	f := newFakeWebapp(t)
	m, cfg, python := newScraperMinion(t, f, "", nil)
	wd := filepath.Join(cfg.WorkingArea, "scrapers", testMinion)
	if _, err := m.LockWorkDir(); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(wd, "cwd"), 0o755); err != nil {
		t.Fatal(err)
	}
	touch(t, filepath.Join(wd, "cwd", "left-by-an-earlier-job"))

	big := bytes.Repeat([]byte("0123456789abcdef"), 200<<10/16)
	config := []testConfig{
		{Name: "settings.yaml", Path: "conf/settings.yaml", Content: []byte("depth: 3\n")},
		{Name: "big.json", Path: "conf/big.json", Content: big},
		{Name: "never.txt", Path: "conf/never.txt", Content: big},
	}
	script := `cat "$1"; wc -c < "$2"; pwd; ls; readlink /proc/self/fd/$LORRY_CONTROLLER_RUNTIME_LOCK_FD; echo "$LORRY_CONTROLLER_CONFIG_FDS"`
	updates := runScraperJob(t, f, m, scraperAnswer(t, 4, python,
		[]string{"sh", "-c", script, "sh", "{config:settings.yaml}", "{config:big.json}"}, nil, config, false))
	if got := finalExit(updates); got != "0" {
		t.Fatalf("exit: got %s, want 0; stderr %q", got, joined(updates, "stderr"))
	}
	usage := filepath.Join(cfg.WorkingArea, "runtimes", "news", "1.0", testRuntimeID+".usage")
	want := fmt.Sprintf("depth: 3\n%d\n%s\n%s\n4:settings.yaml 5:big.json 6:never.txt\n", len(big), filepath.Join(wd, "cwd"), usage)
	if got := joined(updates, "stdout"); got != want {
		t.Errorf("stdout:\ngot  %q\nwant %q", got, want)
	}
	// The job has ended and the minion let go of the runtime: nothing
	// holds its usage lock.
	l, err := flock.TryExclusive(usage)
	if err != nil {
		t.Errorf("usage lock after the job: %v; want it free", err)
	} else {
		l.Close()
	}
}

// With fd_args the scraper is told its descriptors in arguments too.
func TestScraperFDArgs(t *testing.T) {
	f := newFakeWebapp(t)
	m, _, python := newScraperMinion(t, f, "", nil)
	config := []testConfig{{Name: "a.yaml", Content: []byte("a")}, {Name: "b.yaml", Content: []byte("b")}}
	updates := runScraperJob(t, f, m, scraperAnswer(t, 5, python, []string{"sh", "-c", `echo "$@"`, "sh", "--first"}, nil, config, true))
	if got, want := joined(updates, "stdout"), "--first --lock-fd 3 --config-from-fd 4:a.yaml --config-from-fd 5:b.yaml\n"; got != want {
		t.Errorf("arguments: got %q, want %q", got, want)
	}
}

// python is the runtime's; its build is reported with the first job only.
func TestScraperRuntime(t *testing.T) {
	f := newFakeWebapp(t)
	m, _, python := newScraperMinion(t, f, "greet\n", func(c *Config) { c.Token = "minion-token" })
	for i, wantBuilt := range []string{"true", "false"} {
		updates := runScraperJob(t, f, m, scraperAnswer(t, int64(10+i), python, []string{"python", "-m", "news"}, nil, nil, false))
		if got, want := joined(updates, "stdout"), "runtime python -m news\n"; got != want {
			t.Errorf("job %d: stdout: got %q, want %q", i, got, want)
		}
		if got := runtimeBuilt(t, updates); got != wantBuilt {
			t.Errorf("job %d: runtime_built: got %q, want %s", i, got, wantBuilt)
		}
	}
	if f.runtimeAuth != "Bearer minion-token" {
		t.Errorf("runtime download: got Authorization %q, want the minion's token", f.runtimeAuth)
	}
}

// A job that cannot be started says why, and runs nothing.
func TestScraperNotRun(t *testing.T) {
	tests := []struct {
		name         string
		requirements string
		argv         []string
		wantExit     string
		wantStderr   string
	}{
		{name: "build fails", requirements: "nosuch==2.0\n", argv: []string{"python"}, wantExit: "1", wantStderr: "No matching distribution found for nosuch"},
		{name: "unknown config", argv: []string{"cat", "{config:nope.yaml}"}, wantExit: "1", wantStderr: "nope.yaml"},
		{name: "no program", argv: []string{"no-such-scraper"}, wantExit: "127", wantStderr: "no-such-scraper"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeWebapp(t)
			m, _, python := newScraperMinion(t, f, tt.requirements, nil)
			updates := runScraperJob(t, f, m, scraperAnswer(t, 6, python, tt.argv, nil, nil, false))
			if got := finalExit(updates); got != tt.wantExit {
				t.Errorf("exit: got %s, want %s", got, tt.wantExit)
			}
			if got := joined(updates, "stderr"); !strings.Contains(got, tt.wantStderr) {
				t.Errorf("stderr: got %q, want it to say %q", got, tt.wantStderr)
			}
			if got := joined(updates, "stdout"); got != "" {
				t.Errorf("stdout: got %q, want nothing run", got)
			}
		})
	}
}

// A second minion of the same name cannot take the working directory.
func TestScraperWorkDirHeld(t *testing.T) {
	f := newFakeWebapp(t)
	m, cfg, _ := newScraperMinion(t, f, "", nil)
	if _, err := m.LockWorkDir(); err != nil {
		t.Fatal(err)
	}
	other := New(cfg, nil, nil)
	if _, err := other.LockWorkDir(); !errors.Is(err, flock.ErrLocked) {
		t.Errorf("second minion's LockWorkDir: got %v, want ErrLocked", err)
	}
}
