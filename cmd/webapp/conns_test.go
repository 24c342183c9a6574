package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const (
	descriptorLimit = 1024
	idleClients     = 1100
)

// openFDs counts the open files of process pid.
func openFDs(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestIdleConnectionsUnderDescriptorLimit opens 1,100 connections that
// sit idle (half after one request, half having sent nothing) to a
// WEBAPP allowed 1,024 open files, whose idle timeout is far off: the
// health check must still answer, from new connections.
func TestIdleConnectionsUnderDescriptorLimit(t *testing.T) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil || rl.Cur < idleClients+200 {
		t.Skipf("the test itself needs %d open files; it may have %d (%v)", idleClients+200, rl.Cur, err)
	}
	w := startWebapp(t, t.TempDir(), startOpts{openFiles: descriptorLimit, args: []string{"--listen", "127.0.0.1:0", "--idle-timeout", "1h"}})
	limits, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", w.cmd.Process.Pid))
	if err != nil || !strings.Contains(string(limits), fmt.Sprintf("Max open files            %d", descriptorLimit)) {
		t.Fatalf("the WEBAPP's limits (%v):\n%s\nwant %d open files", err, limits, descriptorLimit)
	}
	addr := strings.TrimPrefix(w.url, "http://")

	var conns []net.Conn
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for range idleClients / 2 {
		c, err := net.DialTimeout("tcp", addr, waitLimit)
		if err != nil {
			t.Fatalf("connection %d: %v", len(conns)+1, err)
		}
		conns = append(conns, c)
	}
	// The other half ask once, keeping the connection alive; beyond the
	// descriptors the WEBAPP has, today's would never answer them.
	var answered atomic.Int64
	var wg sync.WaitGroup
	for range idleClients - idleClients/2 {
		c, err := net.DialTimeout("tcp", addr, waitLimit)
		if err != nil {
			t.Fatalf("connection %d: %v", len(conns)+1, err)
		}
		conns = append(conns, c)
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.SetDeadline(time.Now().Add(5 * time.Second))
			fmt.Fprintf(c, "GET /1.0/health-check HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				answered.Add(1)
			}
			c.SetDeadline(time.Time{})
		}()
	}
	wg.Wait()

	fds := openFDs(t, w.cmd.Process.Pid)
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var slowest time.Duration
	for i := range 20 {
		start := time.Now()
		resp, err := c.Get(w.url + "/1.0/health-check")
		if err != nil {
			t.Fatalf("health-check %d with %d idle connections and %d open files allowed: %v", i+1, idleClients, descriptorLimit, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("health-check %d with %d idle connections = %d; want 200", i+1, idleClients, resp.StatusCode)
		}
		slowest = max(slowest, time.Since(start))
	}
	closed := 0
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err != nil && !os.IsTimeout(err) {
			closed++
		}
	}
	t.Logf("%d idle connections to a WEBAPP allowed %d open files: %d of the %d keep-alive requests answered, "+
		"%d open files in the WEBAPP, %d idle connections closed to make room; 20 health checks answered 200, the slowest in %v",
		idleClients, descriptorLimit, answered.Load(), idleClients-idleClients/2, fds, closed, slowest.Round(time.Millisecond))
	if fds >= descriptorLimit {
		t.Errorf("the WEBAPP holds %d open files; want fewer than its limit %d", fds, descriptorLimit)
	}
}

// TestConnectionTimeouts checks the WEBAPP's idle and body-read
// timeouts, made short: an idle keep-alive connection is closed, a body
// that stops or trickles is answered 408, and one that arrives slowly
// but steadily, for longer than the timeout, is read whole.
func TestConnectionTimeouts(t *testing.T) {
	w := startWebapp(t, t.TempDir(), startOpts{args: []string{"--listen", "127.0.0.1:0", "--insecure-no-auth",
		"--idle-timeout", "1s", "--body-read-timeout", "2s", "--body-min-rate", "100"}})
	addr := strings.TrimPrefix(w.url, "http://")
	dial := func(t *testing.T) (net.Conn, *bufio.Reader) {
		c, err := net.DialTimeout("tcp", addr, waitLimit)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(waitLimit))
		return c, bufio.NewReader(c)
	}
	// post sends a form to set-max-jobs in pieces, the gap apart, and
	// returns the status code of the answer.
	post := func(t *testing.T, pieces []string, gap time.Duration, declared int) int {
		c, br := dial(t)
		fmt.Fprintf(c, "POST /1.0/set-max-jobs HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n\r\n",
			addr, declared)
		for i, p := range pieces {
			if i > 0 {
				time.Sleep(gap) // the client's own pace, which the test is about
			}
			if _, err := io.WriteString(c, p); err != nil {
				break // the WEBAPP gave up on the body: its answer says why
			}
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("read the answer: %v", err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	t.Run("idle", func(t *testing.T) {
		c, br := dial(t)
		fmt.Fprintf(c, "GET /1.0/health-check HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		start := time.Now()
		if _, err := br.ReadByte(); err != io.EOF {
			t.Fatalf("read an idle keep-alive connection: %v; want EOF, the WEBAPP closing it", err)
		}
		t.Logf("the idle connection was closed after %v", time.Since(start).Round(time.Millisecond))
	})
	t.Run("stopped", func(t *testing.T) {
		start := time.Now()
		if code := post(t, []string{"max_jobs=5&pad="}, 0, 1000); code != http.StatusRequestTimeout {
			t.Errorf("a body that stopped: %d; want 408", code)
		}
		t.Logf("the stopped body was answered after %v", time.Since(start).Round(time.Millisecond))
	})
	t.Run("trickle", func(t *testing.T) {
		// Each piece within the timeout, but far under 100 bytes/s.
		pieces := []string{"max_jobs=5&pad="}
		for range 20 {
			pieces = append(pieces, "x")
		}
		if code := post(t, pieces, 500*time.Millisecond, 15+20); code != http.StatusRequestTimeout {
			t.Errorf("a body that trickles: %d; want 408", code)
		}
	})
	t.Run("steady", func(t *testing.T) {
		// 2,000 bytes at about 400 bytes/s: more than twice the timeout.
		pieces := []string{"max_jobs=5&pad="}
		for range 10 {
			pieces = append(pieces, strings.Repeat("x", 200))
		}
		if code := post(t, pieces, 500*time.Millisecond, 15+2000); code != http.StatusOK {
			t.Errorf("a body that arrives steadily: %d; want 200", code)
		}
	})
}
