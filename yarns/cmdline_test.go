package yarns

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdlineWatch looks through the command line of every process of the
// scenario, again and again, for a secret, from cmdline-watch until
// cmdline-watch-stop. A process is the scenario's when it runs in the
// scenario's directory or names it: the scenarios run side by side, and
// their own commands (a git ls-remote of the downstream, say) may hold the
// same secret.
type cmdlineWatch struct {
	secret []byte
	work   string
	stop   chan struct{}
	done   chan struct{}

	mu    sync.Mutex
	scans int
	seen  map[string]bool // "pid: command line" of each process that held it
}

func (w *cmdlineWatch) run() {
	defer close(w.done)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		w.scan()
		select {
		case <-w.stop:
			w.scan()
			return
		case <-tick.C:
		}
	}
}

func (w *cmdlineWatch) scan() {
	files, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	w.mu.Lock()
	defer w.mu.Unlock()
	w.scans++
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err == nil && bytes.Contains(data, w.secret) && w.ours(filepath.Dir(f), data) {
			pid := filepath.Base(filepath.Dir(f))
			w.seen[pid+": "+string(bytes.ReplaceAll(data, []byte{0}, []byte{' '}))] = true
		}
	}
}

// ours says whether the process of /proc/PID dir, with command line
// cmdline, is the scenario's.
func (w *cmdlineWatch) ours(dir string, cmdline []byte) bool {
	if bytes.Contains(cmdline, []byte(w.work)) {
		return true
	}
	cwd, err := os.Readlink(filepath.Join(dir, "cwd"))
	return err == nil && (cwd == w.work || strings.HasPrefix(cwd, w.work+"/"))
}

// cmdCmdlineWatch starts watching for the secret; cmdCmdlineWatchStop
// stops and prints the command lines that held it.
func cmdCmdlineWatch(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "cmdline-watch")
	s := state(ts)
	if len(args) != 1 || args[0] == "" {
		ts.Fatalf("usage: cmdline-watch SECRET")
	}
	if s.cmdline != nil {
		ts.Fatalf("cmdline-watch: already watching")
	}
	w := &cmdlineWatch{secret: []byte(args[0]), work: ts.Getenv("WORK"), stop: make(chan struct{}), done: make(chan struct{}), seen: map[string]bool{}}
	s.cmdline = w
	go w.run()
	ts.Defer(func() {
		select {
		case <-w.stop:
		default:
			close(w.stop)
		}
		<-w.done
	})
}

func cmdCmdlineWatchStop(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "cmdline-watch-stop")
	s := state(ts)
	w := s.cmdline
	if w == nil {
		ts.Fatalf("cmdline-watch-stop: not watching")
	}
	s.cmdline = nil
	// Asked for even when nothing is printed, so that stdout is this
	// command's and not the last one's.
	out := ts.Stdout()
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	ts.Logf("cmdline-watch: %d scans of the scenario's processes", w.scans)
	for line := range w.seen {
		fmt.Fprintln(out, line)
	}
}
