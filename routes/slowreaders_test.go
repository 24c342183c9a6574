package routes

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// slowReaders starts n clients that ask for path and, once the answer has
// begun, read no more of it: the server is left writing into full socket
// buffers. They hang up when the test ends.
func slowReaders(t testing.TB, baseURL, path string, n int) {
	t.Helper()
	addr := strings.TrimPrefix(baseURL, "http://")
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		// A small receive window, so that the answer fills it at once.
		c.(*net.TCPConn).SetReadBuffer(4096)
		if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, addr); err != nil {
			t.Fatal(err)
		}
		// The answer has begun: whatever the server holds to write it, it
		// holds now.
		if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
			t.Fatalf("slow reader: %v", err)
		}
	}
}

// getWithin makes a GET that gives up after waitLimit, so that a request
// stuck behind the slow readers fails the test instead of hanging it.
func getWithin(t testing.TB, url string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), slowWaitLimit)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err.Error()
	}
	return resp.StatusCode, string(b)
}

// slowWaitLimit bounds how long a request may wait in these tests; it is
// no measure of speed, only a guard against hanging.
const slowWaitLimit = 2 * time.Minute

// smallBufferServer serves h on loopback with small socket send buffers,
// so that an answer nobody reads blocks its handler after a few KiB
// rather than a few MiB.
func smallBufferServer(t testing.TB, h http.Handler) string {
	t.Helper()
	hs := httptest.NewUnstartedServer(h)
	hs.Listener = smallBufferListener{hs.Listener}
	hs.Start()
	t.Cleanup(hs.Close)
	return hs.URL
}

type smallBufferListener struct{ net.Listener }

func (l smallBufferListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(4096)
	}
	return c, err
}

func TestSlowStatusReadersHoldNoSession(t *testing.T) {
	ts := newTestServer(t)
	paths := make([]string, 20000)
	for i := range paths {
		paths[i] = fmt.Sprintf("delta/project-%05d/repository", i)
	}
	ts.configure(t, paths...)
	url := smallBufferServer(t, ts.Handler())
	slowReaders(t, url, "/1.0/status", 8)

	for _, path := range []string{"/1.0/health-check", "/1.0/list-queue", "/1.0/lorry/" + paths[123],
		"/1.0/status-html", "/1.0/list-jobs"} {
		if code, body := getWithin(t, url+path); code != 200 {
			t.Fatalf("GET %s with 8 slow status readers = %d %.200s; want 200", path, code, body)
		}
	}
	resp, err := http.PostForm(url+"/1.0/give-me-job", map[string][]string{"host": {"h"}, "pid": {"1"}, "minion": {"m"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("give-me-job with 8 slow status readers = %d; want 200", resp.StatusCode)
	}
	// A client that reads gets the whole queue.
	code, body := getWithin(t, url+"/1.0/status")
	if code != 200 || strings.Count(body, `"path":`) != len(paths) {
		t.Errorf("status with 8 slow readers = %d with %d lorries; want 200 with %d", code, strings.Count(body, `"path":`), len(paths))
	}
}

// BenchmarkHealthWithSlowReaders asks for the health check 200 times
// while 8 clients that never read hold status answers of 20,000 lorries
// open, and reports how long it took.
func BenchmarkHealthWithSlowReaders(b *testing.B) {
	for range b.N {
		ts := newTestServer(b)
		paths := make([]string, 20000)
		for i := range paths {
			paths[i] = fmt.Sprintf("delta/project-%05d/repository", i)
		}
		ts.configure(b, paths...)
		url := smallBufferServer(b, ts.Handler())
		slowReaders(b, url, "/1.0/status", 8)
		var times []time.Duration
		for range 200 {
			start := time.Now()
			if code, body := getWithin(b, url+"/1.0/health-check"); code != 200 {
				b.Fatalf("health-check = %d %s", code, body)
			}
			times = append(times, time.Since(start))
		}
		slices.Sort(times)
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		b.ReportMetric(ms(times[len(times)/2]), "health-p50-ms")
		b.ReportMetric(ms(times[len(times)*99/100]), "health-p99-ms")
		b.ReportMetric(ms(times[len(times)-1]), "health-max-ms")
	}
}
