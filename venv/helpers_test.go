package venv

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"lorrycontroller.dev/lc/flock"
)

// tarOf is a tar stream of files, name to contents, with the parent
// directories listed first as git archive does.
func tarOf(t testing.TB, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	dirs := map[string]bool{}
	for _, n := range names {
		for d := filepath.Dir(n); d != "."; d = filepath.Dir(d) {
			if !dirs[d] {
				dirs[d] = true
				if err := tw.WriteHeader(&tar.Header{Name: d + "/", Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := tw.WriteHeader(&tar.Header{Name: n, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(files[n]))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(files[n])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// sourceOf serves the same files for every runtime.
func sourceOf(t testing.TB, files map[string]string) Source {
	b := tarOf(t, files)
	return func(ctx context.Context, rt Runtime) (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	}
}

// fake is a python that makes an environment and installs nothing, in no
// time, logging what it was asked to do. Its pip stalls while the file
// stall exists, after saying so on the FIFO started, and fails while the
// file fail exists.
type fake struct {
	python  string
	log     string
	stall   string
	started string
	fail    string
}

func newFake(t testing.TB) fake {
	t.Helper()
	dir := t.TempDir()
	f := fake{
		python:  filepath.Join(dir, "python"),
		log:     filepath.Join(dir, "log"),
		stall:   filepath.Join(dir, "stall"),
		started: filepath.Join(dir, "started"),
		fail:    filepath.Join(dir, "fail"),
	}
	script := fmt.Sprintf(`#!/bin/sh
if [ "$1 $2" = "-m venv" ]; then
	mkdir -p "$3/bin" && cp "$0" "$3/bin/python" || exit 1
	echo "venv $3" >>%[1]s
	exit 0
fi
if [ "$1 $2" = "-m pip" ]; then
	echo "pip $PWD $*" >>%[1]s
	if [ -e %[2]s ]; then
		echo half >"$(dirname "$0")/../half-built"
		echo started >%[3]s
		exec sleep 600
	fi
	if [ -e %[4]s ]; then
		echo "ERROR: No matching distribution found for nosuch" >&2
		exit 1
	fi
	exit 0
fi
echo "fake python: $*" >&2
exit 2
`, f.log, f.stall, f.started, f.fail)
	if err := os.WriteFile(f.python, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(f.started, 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// builds counts the environments the fake made.
func (f fake) builds(t testing.TB) int {
	t.Helper()
	b, err := os.ReadFile(f.log)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "venv ")
}

func touchFile(t testing.TB, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

func newCache(t testing.TB, dir string, pipArgs ...string) *Cache {
	t.Helper()
	c, err := New(Config{Dir: dir, PipArgs: pipArgs, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var simpleSource = map[string]string{"requirements.txt": "greet==1.0\n"}

// quiet is the logger of the caches in tests.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// helperEnv selects TestHelperProcess's part in a child of the test.
const helperEnv = "VENV_TEST_HELPER"

// helper starts the test binary as a helper process that acquires rt from
// the cache in dir with the fake python. It says "acquired built=BOOL" on
// its stdout; with hold, it then runs sleep with the usage lock and says
// "held PID". It waits for its stdin to close before it releases.
func helper(t testing.TB, dir string, rt Runtime, hold bool, pipArgs ...string) (*exec.Cmd, *bufio.Reader, io.WriteCloser) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	mode := "acquire"
	if hold {
		mode = "hold"
	}
	cmd.Env = append(os.Environ(), helperEnv+"="+strings.Join(append([]string{mode, dir, rt.Name, rt.ID, rt.Python}, pipArgs...), "\x1f"))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd, bufio.NewReader(out), in
}

func TestHelperProcess(t *testing.T) {
	arg := os.Getenv(helperEnv)
	if arg == "" {
		return
	}
	parts := strings.Split(arg, "\x1f")
	mode, dir := parts[0], parts[1]
	rt := Runtime{Name: parts[2], ID: parts[3], Python: parts[4]}
	c, err := New(Config{Dir: dir, PipArgs: parts[5:], Logger: quiet})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	env, err := c.Acquire(context.Background(), rt, sourceOf(t, simpleSource))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	fmt.Printf("acquired built=%v\n", env.Built)
	if mode == "hold" {
		sleep := exec.Command("sleep", "600")
		sleep.ExtraFiles = []*os.File{env.LockFile()}
		if err := sleep.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		fmt.Printf("held %d\n", sleep.Process.Pid)
	}
	io.Copy(io.Discard, os.Stdin)
	env.Release()
	os.Exit(0)
}

func readLine(t testing.TB, r *bufio.Reader) string {
	t.Helper()
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("helper said %q: %v", line, err)
	}
	return strings.TrimSpace(line)
}

// needVenv fails, naming the package, where python3 cannot make
// environments with pip in them.
func needVenv(t testing.TB) {
	t.Helper()
	out, err := exec.Command("python3", "-c", "import venv, ensurepip").CombinedOutput()
	if err != nil {
		t.Fatalf("python3 -m venv is needed and does not work here (on Debian: apt-get install python3-venv): %v\n%s", err, out)
	}
}

// writeWheel writes a wheel of dist at version holding the package pkg
// whose __init__.py is code, into dir.
func writeWheel(t testing.TB, dir, dist, version, pkg, code string) {
	t.Helper()
	info := dist + "-" + version + ".dist-info"
	files := []struct{ name, data string }{
		{pkg + "/__init__.py", code},
		{info + "/METADATA", "Metadata-Version: 2.1\nName: " + dist + "\nVersion: " + version + "\n"},
		{info + "/WHEEL", "Wheel-Version: 1.0\nGenerator: venv-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
	}
	f, err := os.Create(filepath.Join(dir, dist+"-"+version+"-py3-none-any.whl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z := zip.NewWriter(f)
	var record strings.Builder
	for _, file := range files {
		w, err := z.Create(file.name)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, file.data)
		sum := sha256.Sum256([]byte(file.data))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", file.name, base64.RawURLEncoding.EncodeToString(sum[:]), len(file.data))
	}
	record.WriteString(info + "/RECORD,,\n")
	w, err := z.Create(info + "/RECORD")
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(w, record.String())
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
}

func fmtSscan(line string, pid *int) (int, error) {
	return fmt.Sscanf(line, "held %d", pid)
}

func errLocked() error { return flock.ErrLocked }
