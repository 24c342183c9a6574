package yarns

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdlineWatch looks through the command line of every process of the
// machine, again and again, for a secret, from cmdline-watch until
// cmdline-watch-stop.
type cmdlineWatch struct {
	secret []byte
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
		if err == nil && bytes.Contains(data, w.secret) {
			pid := filepath.Base(filepath.Dir(f))
			w.seen[pid+": "+string(bytes.ReplaceAll(data, []byte{0}, []byte{' '}))] = true
		}
	}
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
	w := &cmdlineWatch{secret: []byte(args[0]), stop: make(chan struct{}), done: make(chan struct{}), seen: map[string]bool{}}
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
	ts.Logf("cmdline-watch: %d scans of every process", w.scans)
	for line := range w.seen {
		fmt.Fprintln(out, line)
	}
}
