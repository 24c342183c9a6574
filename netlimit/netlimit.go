// Package netlimit bounds what the clients of a server can hold of it:
// how many connections are open at once, so that they never take every
// file descriptor, and how long a request body may take to arrive, so
// that a client cannot hold a request open by sending nothing.
package netlimit

import (
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Conns caps the connections open at once, over all the listeners it
// wraps, at a maximum. At the cap, a new connection takes the place of
// the one that has been idle longest (a keep-alive connection between
// requests, or one that has sent nothing yet): idle connections cost the
// server a descriptor each and give it nothing, and a monitor's health
// check must not wait for them to time out. With none idle, Accept waits
// for a connection to close or go idle.
//
// The server must report its connections' states to ConnState
// (http.Server.ConnState), which tells idle connections from busy ones.
type Conns struct {
	max int
	log *slog.Logger

	mu      sync.Mutex
	conns   map[*conn]connState
	changed chan struct{} // closed, and replaced, when a connection closes or goes idle
}

type connState struct {
	state http.ConnState
	since time.Time
}

// NewConns caps connections at max (at least 1).
func NewConns(limit int, log *slog.Logger) *Conns {
	return &Conns{max: max(limit, 1), log: log, conns: map[*conn]connState{}, changed: make(chan struct{})}
}

// Listener wraps ln, its connections counted under the cap.
func (cs *Conns) Listener(ln net.Listener) net.Listener {
	return &listener{Listener: ln, cs: cs, closed: make(chan struct{})}
}

type listener struct {
	net.Listener
	cs     *Conns
	closed chan struct{}
	once   sync.Once
}

// Accept accepts a connection, then makes room for it under the cap by
// closing the connection idle longest, or waits for room. When the
// process is out of descriptors, it closes an idle connection too, so
// that the server's next try finds one.
func (l *listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
			if !l.cs.evict() {
				l.cs.log.Warn("out of file descriptors, and no connection is idle", "err", err)
			}
		}
		return nil, err
	}
	if err := l.cs.room(l.closed); err != nil {
		c.Close()
		return nil, err
	}
	w := &conn{Conn: c, cs: l.cs}
	l.cs.mu.Lock()
	l.cs.conns[w] = connState{state: http.StateNew, since: time.Now()}
	l.cs.mu.Unlock()
	return w, nil
}

// Close closes the listener; its connections stay open.
func (l *listener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// room waits until fewer than max connections are open, closing idle
// ones to get there, or until closed is.
func (cs *Conns) room(closed <-chan struct{}) error {
	for {
		cs.mu.Lock()
		n, changed := len(cs.conns), cs.changed
		cs.mu.Unlock()
		if n < cs.max {
			return nil
		}
		if cs.evict() {
			continue
		}
		select {
		case <-changed:
		case <-closed:
			return net.ErrClosed
		}
	}
}

// evict closes the connection idle longest, and says whether there was
// one.
func (cs *Conns) evict() bool {
	cs.mu.Lock()
	var oldest *conn
	var since time.Time
	for c, s := range cs.conns {
		if (s.state == http.StateIdle || s.state == http.StateNew) && (oldest == nil || s.since.Before(since)) {
			oldest, since = c, s.since
		}
	}
	if oldest != nil {
		delete(cs.conns, oldest)
	}
	cs.mu.Unlock()
	if oldest == nil {
		return false
	}
	oldest.Close()
	return true
}

// ConnState records a connection's state; give it to
// http.Server.ConnState.
func (cs *Conns) ConnState(nc net.Conn, state http.ConnState) {
	c, ok := nc.(*conn)
	if !ok {
		return
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if _, open := cs.conns[c]; !open {
		return
	}
	cs.conns[c] = connState{state: state, since: time.Now()}
	if state == http.StateIdle {
		cs.signal()
	}
}

// idle is how many connections are idle between requests.
func (cs *Conns) idle() int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	n := 0
	for _, s := range cs.conns {
		if s.state == http.StateIdle {
			n++
		}
	}
	return n
}

// Open is how many connections are open.
func (cs *Conns) Open() int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return len(cs.conns)
}

func (cs *Conns) forget(c *conn) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	delete(cs.conns, c)
	cs.signal()
}

func (cs *Conns) signal() {
	close(cs.changed)
	cs.changed = make(chan struct{})
}

// conn is a connection counted until it is closed.
type conn struct {
	net.Conn
	cs   *Conns
	once sync.Once
}

func (c *conn) Close() error {
	c.once.Do(func() { c.cs.forget(c) })
	return c.Conn.Close()
}

// Max is the cap of connections: configured, or when it is 0 what the limit of
// open files leaves for them (DefaultMax), which it logs.
func Max(configured int, log *slog.Logger) int {
	if configured > 0 {
		return configured
	}
	limit, err := DescriptorLimit()
	if err != nil {
		log.Warn("read the limit of open files; connections capped at 1024", "err", err)
		return 1024
	}
	n := DefaultMax(limit)
	log.Info("connections capped", "max_connections", n, "open_files_limit", limit)
	return n
}

// DefaultMax is the cap of connections for a process whose descriptors
// are limited to limit: a quarter of them, and at least 64, are kept for
// the rest of its work (its database, spooled bodies, child processes).
func DefaultMax(limit uint64) int {
	reserve := max(limit/4, 64)
	if limit <= reserve+16 {
		return 16
	}
	return int(min(limit-reserve, 1<<20))
}

// DescriptorLimit is the process's limit of open files.
func DescriptorLimit() (uint64, error) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		return 0, err
	}
	return rl.Cur, nil
}
