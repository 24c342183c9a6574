package yarns

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// hookReceiver is the webhook receiver of hook-serve: it records
// every POST, checks its signature against the secret, and answers with
// the codes it was given in turn, then 200.
type hookReceiver struct {
	secret []byte
	mu     sync.Mutex
	posts  []string
	codes  []int
}

func (h *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	m := hmac.New(sha256.New, h.secret)
	m.Write(body)
	sig := "signature-bad"
	if hmac.Equal([]byte(r.Header.Get("X-Lorry-Controller-Signature")), []byte("sha256="+hex.EncodeToString(m.Sum(nil)))) {
		sig = "signature-ok"
	}
	h.mu.Lock()
	code := http.StatusOK
	if len(h.codes) > 0 {
		code, h.codes = h.codes[0], h.codes[1:]
	}
	h.posts = append(h.posts, fmt.Sprintf("%s %s %s %s %d %s", r.Method, r.Header.Get("X-Lorry-Controller-Event"),
		r.Header.Get("X-Lorry-Controller-Delivery"), sig, code, body))
	h.mu.Unlock()
	w.WriteHeader(code)
}

func (h *hookReceiver) received() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.posts...)
}

func cmdHookServe(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "hook-serve")
	if len(args) < 1 {
		ts.Fatalf("usage: hook-serve SECRETFILE [CODE...]")
	}
	s := state(ts)
	if s.hooks != nil {
		ts.Fatalf("hook-serve: a receiver runs already")
	}
	secret, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	h := &hookReceiver{secret: []byte(strings.TrimSpace(string(secret)))}
	for _, a := range args[1:] {
		code, err := strconv.Atoi(a)
		if err != nil {
			ts.Fatalf("hook-serve: %q is no status code", a)
		}
		h.codes = append(h.codes, code)
	}
	srv := httptest.NewServer(h)
	s.hooks = h
	ts.Defer(srv.Close)
	ts.Setenv("HOOKURL", srv.URL)
}

func cmdHookPosts(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "hook-posts")
	want := 0
	if len(args) == 2 && args[0] == "-wait" {
		var err error
		if want, err = strconv.Atoi(args[1]); err != nil {
			ts.Fatalf("hook-posts: -wait %q is not a number", args[1])
		}
		args = args[2:]
	}
	if len(args) != 0 {
		ts.Fatalf("usage: hook-posts [-wait N]")
	}
	h := state(ts).hooks
	if h == nil {
		ts.Fatalf("hook-posts: no hook-serve runs")
	}
	out := ts.Stdout()
	deadline := time.Now().Add(waitLimit)
	for {
		posts := h.received()
		if len(posts) >= want {
			for _, p := range posts {
				fmt.Fprintln(out, p)
			}
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("hook-posts: %d posts after %v, want %d:\n%s", len(posts), waitLimit, want, strings.Join(posts, "\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
