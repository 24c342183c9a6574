package minion

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"lorrycontroller.dev/lc/venv"
)

// TestRuntimeDownloadBoundedByStallNotLength checks that the client's
// timeout bounds how long a runtime's download may go without a byte
// arriving, not the whole download: a source that trickles in for longer
// than the timeout is fetched whole, and one that stops is cut short.
func TestRuntimeDownloadBoundedByStallNotLength(t *testing.T) {
	const (
		timeout = 1500 * time.Millisecond
		chunks  = 20
		gap     = 100 * time.Millisecond // chunks*gap is longer than the timeout
	)
	chunk := bytes.Repeat([]byte("x"), 1024)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		for i := range chunks {
			w.Write(chunk)
			w.(http.Flusher).Flush()
			if strings.Contains(r.URL.Path, "/stalls/") && i == 1 {
				select {
				case <-r.Context().Done():
				case <-time.After(10 * time.Second):
				}
				return
			}
			time.Sleep(gap)
		}
	}))
	defer srv.Close()
	m := New(Config{WebappURLs: []string{srv.URL}}, &http.Client{Timeout: timeout}, nil)

	body, err := m.fetchRuntime(context.Background(), venv.Runtime{Name: "steady", ID: "a"})
	if err != nil {
		t.Fatalf("steady download: %v", err)
	}
	got, err := io.ReadAll(body)
	body.Close()
	if err != nil || len(got) != chunks*len(chunk) {
		t.Errorf("steady download over %v with a timeout of %v: %d bytes, %v; want %d bytes",
			chunks*gap, timeout, len(got), err, chunks*len(chunk))
	}

	start := time.Now()
	body, err = m.fetchRuntime(context.Background(), venv.Runtime{Name: "stalls", ID: "a"})
	if err != nil {
		t.Fatalf("stalling download: %v", err)
	}
	got, err = io.ReadAll(body)
	body.Close()
	if err == nil || !strings.Contains(err.Error(), "nothing received for 1.5s") {
		t.Errorf("stalling download: %d bytes, %v; want cut short for receiving nothing", len(got), err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("stalling download cut short after %v; want soon after %v of silence", took, timeout)
	}
}
