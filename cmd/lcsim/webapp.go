package main

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// webapp is a running WEBAPP process.
type webapp struct {
	cmd   *exec.Cmd
	url   string
	pprof string // the address of its profiles, "" for none
	done  chan error
}

// freeAddr is a loopback address with a port free now.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// webappArgs are what a WEBAPP of the simulation is started with.
type webappArgs struct {
	bin      string
	statedb  string
	dir      string // for its CONFGIT clone, address file and log
	confgit  string // the URL of CONFGIT
	pprof    string // --debug-pprof-listen, "" for none
	extra    []string
	logLevel string
}

// startWebapp starts the WEBAPP and waits until it answers.
func startWebapp(ctx context.Context, a webappArgs) (*webapp, error) {
	addrFile := filepath.Join(a.dir, "addr")
	os.Remove(addrFile)
	args := []string{
		"--statedb", a.statedb, "--configuration-directory", filepath.Join(a.dir, "confgit"),
		"--confgit-url", a.confgit, "--confgit-branch", "master",
		"--listen", "127.0.0.1:0", "--addr-file", addrFile, "--insecure-no-auth",
		"--log-level", a.logLevel, "--max-connections", "4000",
	}
	if a.pprof != "" {
		args = append(args, "--debug-pprof-listen", a.pprof)
	}
	args = append(args, a.extra...)
	log, err := os.OpenFile(filepath.Join(a.dir, "webapp.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(a.bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, err
	}
	w := &webapp{cmd: cmd, pprof: a.pprof, done: make(chan error, 1)}
	go func() {
		w.done <- cmd.Wait()
		log.Close()
	}()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		if b, err := os.ReadFile(addrFile); err == nil && len(b) > 0 {
			w.url = "http://" + strings.TrimSpace(string(b))
			break
		}
		select {
		case err := <-w.done:
			return nil, fmt.Errorf("the WEBAPP exited: %v (see %s)", err, filepath.Join(a.dir, "webapp.log"))
		case <-ctx.Done():
			w.stop()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			w.stop()
			return nil, errors.New("the WEBAPP did not start within 5 minutes")
		}
	}
	return w, nil
}

// stop ends the WEBAPP with SIGTERM, and SIGKILL if it lingers.
func (w *webapp) stop() {
	if w.cmd.Process == nil {
		return
	}
	w.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-w.done:
	case <-time.After(30 * time.Second):
		w.cmd.Process.Kill()
		<-w.done
	}
}

// procMem is the WEBAPP's resident memory now and at its peak, in bytes.
func (w *webapp) procMem() (rss, peak int64) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", w.cmd.Process.Pid))
	if err != nil {
		return -1, -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(v)
		if len(fields) == 0 {
			continue
		}
		n, _ := strconv.ParseInt(fields[0], 10, 64)
		switch k {
		case "VmRSS":
			rss = n << 10
		case "VmHWM":
			peak = n << 10
		}
	}
	return rss, peak
}

// cpu is the CPU time the WEBAPP has used, user and system.
func (w *webapp) cpu() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", w.cmd.Process.Pid))
	if err != nil {
		return -1
	}
	// The fields after the command name, which is in parentheses.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+1:]
	}
	f := strings.Fields(s)
	if len(f) < 13 {
		return -1
	}
	// utime and stime are fields 14 and 15 of the line, 12 and 13 here.
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	const ticks = 100 // USER_HZ on Linux
	return time.Duration(ut+st) * time.Second / ticks
}

// get times a GET of path, reading the answer whole, and answers its
// status and size.
func (w *webapp) get(ctx context.Context, c *http.Client, path string) (time.Duration, int, int64, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", w.url+path, nil)
	if err != nil {
		return 0, 0, 0, err
	}
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return 0, 0, 0, err
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return time.Since(start), resp.StatusCode, n, err
}

// dbSize is the size of the SQLite state database with its WAL, or of
// the PostgreSQL database (pg_database_size); -1 if it cannot be told.
func dbSize(ctx context.Context, statedb string) int64 {
	if strings.Contains(statedb, "://") {
		db, err := sql.Open("pgx", statedb)
		if err != nil {
			return -1
		}
		defer db.Close()
		var n int64
		if err := db.QueryRowContext(ctx, `SELECT pg_database_size(current_database())`).Scan(&n); err != nil {
			return -1
		}
		return n
	}
	var n int64
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if fi, err := os.Stat(statedb + suffix); err == nil {
			n += fi.Size()
		}
	}
	return n
}
