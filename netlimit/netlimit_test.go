package netlimit

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"
)

const waitLimit = 30 * time.Second

func TestDefaultMax(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit uint64
		want  int
	}{
		{name: "ulimit 1024", limit: 1024, want: 768},
		{name: "tiny", limit: 50, want: 16},
		{name: "small", limit: 256, want: 192},
		{name: "systemd's hard limit", limit: 524288, want: 393216},
		{name: "unlimited", limit: 1 << 62, want: 1 << 20},
	} {
		if got := DefaultMax(tc.limit); got != tc.want {
			t.Errorf("%s: DefaultMax(%d) = %d; want %d", tc.name, tc.limit, got, tc.want)
		}
	}
}

// serve runs a server capped at max connections, and returns its
// address and its Conns.
func serve(t *testing.T, max int) (string, *Conns) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cs := NewConns(max, slog.New(slog.DiscardHandler))
	hs := &http.Server{ConnState: cs.ConnState, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		fmt.Fprint(w, "ok")
	})}
	go hs.Serve(cs.Listener(ln))
	t.Cleanup(func() { hs.Close() })
	return ln.Addr().String(), cs
}

// ask sends a request on c and reads its answer.
func ask(c net.Conn, br *bufio.Reader) error {
	c.SetDeadline(time.Now().Add(waitLimit))
	defer c.SetDeadline(time.Time{})
	if _, err := fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		return err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

// waitIdle waits until n connections are idle. A client reads its
// answer before the server marks the connection idle, so without this
// the order in which connections went idle is the scheduler's choice.
func waitIdle(t *testing.T, cs *Conns, n int) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for cs.idle() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections idle; want %d", cs.idle(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func dial(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, waitLimit)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

// At the cap, a new connection takes the place of the one idle longest.
func TestConnsCloseTheIdleLongest(t *testing.T) {
	addr, cs := serve(t, 3)
	var conns []net.Conn
	var readers []*bufio.Reader
	for i := range 3 {
		c, br := dial(t, addr)
		if err := ask(c, br); err != nil {
			t.Fatalf("request on connection %d: %v", i+1, err)
		}
		waitIdle(t, cs, i+1)
		conns, readers = append(conns, c), append(readers, br)
	}
	// The second is used again: the first is now the idle longest.
	if err := ask(conns[1], readers[1]); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, cs, 3)
	c, br := dial(t, addr)
	if err := ask(c, br); err != nil {
		t.Fatalf("request on a connection over the cap: %v", err)
	}
	conns[0].SetReadDeadline(time.Now().Add(waitLimit))
	if _, err := readers[0].ReadByte(); err != io.EOF {
		t.Errorf("the connection idle longest: read %v; want EOF, closed to make room", err)
	}
	for _, i := range []int{1, 2} {
		if err := ask(conns[i], readers[i]); err != nil {
			t.Errorf("connection %d, idle for less long: %v; want it still open", i+1, err)
		}
	}
	if n := cs.Open(); n != 3 {
		t.Errorf("%d connections open; want 3", n)
	}
}

// With no connection idle, a new one waits for one to close.
func TestConnsWaitForRoom(t *testing.T) {
	addr, cs := serve(t, 1)
	busy, _ := dial(t, addr)
	// A request whose body has not all come: the connection is busy.
	fmt.Fprintf(busy, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n12345")
	// Its first byte read, the connection counts as active, not idle; the
	// second connection must not take its place.
	deadline := time.Now().Add(waitLimit)
	for !active(cs) {
		if time.Now().After(deadline) {
			t.Fatal("the busy connection never became active")
		}
		time.Sleep(time.Millisecond)
	}
	c, br := dial(t, addr)
	answered := make(chan error, 1)
	go func() { answered <- ask(c, br) }()
	select {
	case err := <-answered:
		t.Fatalf("a connection over the cap, with none idle, was answered (%v); want it to wait", err)
	case <-time.After(200 * time.Millisecond):
	}
	busy.Close()
	select {
	case err := <-answered:
		if err != nil {
			t.Errorf("the waiting connection, once there was room: %v", err)
		}
	case <-time.After(time.Until(deadline)):
		t.Fatal("the waiting connection was not answered once there was room")
	}
}

// active says whether a connection of cs is active.
func active(cs *Conns) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for _, s := range cs.conns {
		if s.state == http.StateActive {
			return true
		}
	}
	return false
}
