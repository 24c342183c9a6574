package yarns

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// --- an upstream that never answers ---

// staller is the server of stall-serve: its first request is never
// answered, every later one is answered 404 at once.
type staller struct {
	mu       sync.Mutex
	requests int
	open     bool // the first request is still connected
}

func (st *staller) ServeHTTP(w http.ResponseWriter, r *http.Request, stop <-chan struct{}) {
	st.mu.Lock()
	st.requests++
	first := st.requests == 1
	if first {
		st.open = true
	}
	st.mu.Unlock()
	if !first {
		http.NotFound(w, r)
		return
	}
	// Held until the client goes away (the connection is closed when
	// the process holding it dies) or the script ends.
	select {
	case <-r.Context().Done():
	case <-stop:
	}
	st.mu.Lock()
	st.open = false
	st.mu.Unlock()
}

func (st *staller) isOpen() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.open
}

func cmdStallServe(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "stall-serve")
	if len(args) != 0 {
		ts.Fatalf("usage: stall-serve")
	}
	s := state(ts)
	if s.staller != nil {
		ts.Fatalf("stall-serve: already serving")
	}
	st := &staller{}
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { st.ServeHTTP(w, r, stop) }))
	// Deferred calls run last first: the held request is let go, then
	// the server closed.
	ts.Defer(srv.Close)
	ts.Defer(func() { close(stop) })
	s.staller = st
	ts.Setenv("STALLURL", srv.URL)
}

// cmdStallWait waits until the request that stall-serve holds is open, or
// with "!" until it is closed.
func cmdStallWait(ts *testscript.TestScript, neg bool, args []string) {
	s := state(ts)
	if s.staller == nil || len(args) != 0 {
		ts.Fatalf("usage: stall-wait, after stall-serve")
	}
	deadline := time.Now().Add(waitLimit)
	for s.staller.isOpen() == neg {
		if time.Now().After(deadline) {
			ts.Fatalf("stall-wait: the held request is open: %v after %v", !neg, waitLimit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// --- a proxy that can be cut ---

// proxy forwards TCP connections to the WEBAPP until it is cut. While cut,
// it accepts connections and never answers, as a network that drops
// packets does; cutting closes the connections it forwarded.
type proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]bool // open connections, on both sides
}

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.conns[c] = true
		cut := p.cut
		p.mu.Unlock()
		if cut {
			continue // held open, never read
		}
		go p.forward(c)
	}
}

func (p *proxy) forward(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		p.drop(c)
		return
	}
	p.mu.Lock()
	p.conns[up] = true
	p.mu.Unlock()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); io.Copy(up, c); p.drop(up) }()
	go func() { defer wg.Done(); io.Copy(c, up); p.drop(c) }()
	wg.Wait()
	p.drop(c)
	p.drop(up)
}

func (p *proxy) drop(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

// setCut cuts or mends the proxy; either way the connections open now are
// closed, so that clients make new ones.
func (p *proxy) setCut(cut bool) {
	p.mu.Lock()
	p.cut = cut
	conns := p.conns
	p.conns = map[net.Conn]bool{}
	p.mu.Unlock()
	for c := range conns {
		c.Close()
	}
}

func cmdProxyStart(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "proxy-start")
	s := state(ts)
	if len(args) != 0 || s.url == "" || s.proxy != nil {
		ts.Fatalf("usage: proxy-start, once, after webapp-start")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	p := &proxy{ln: ln, target: strings.TrimPrefix(s.url, "http://"), conns: map[net.Conn]bool{}}
	go p.serve()
	ts.Defer(func() {
		ln.Close()
		p.setCut(true)
	})
	s.proxy = p
	ts.Setenv("PROXYURL", "http://"+ln.Addr().String())
}

func cmdProxySet(cut bool) func(ts *testscript.TestScript, neg bool, args []string) {
	return func(ts *testscript.TestScript, neg bool, args []string) {
		noNeg(ts, neg, "proxy-cut/mend")
		s := state(ts)
		if s.proxy == nil || len(args) != 0 {
			ts.Fatalf("usage: proxy-cut, proxy-mend, after proxy-start")
		}
		s.proxy.setCut(cut)
	}
}
