// Package heldport gives tests a loopback port that stays theirs while
// the servers on it come and go: a server killed and started again on
// its address, or stopped so that its clients see connections refused.
//
// Closing a listener frees its port at once. A connection made anywhere
// on the machine meanwhile may take it as its own port, and the server
// cannot listen there again (EADDRINUSE); a test that stops a server and
// binds its port again has the same moment. A Port is a socket bound to
// the port with SO_REUSEPORT that never listens, and its listeners set
// SO_REUSEPORT too. While it is open, connections to the port with no
// listener are refused, a listener on port 0 or a connection's own port
// skips it, and a bind without SO_REUSEPORT fails.
package heldport

import (
	"context"
	"net"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// Port is a held loopback port.
type Port struct {
	fd   int
	port int
}

// New holds a free port of 127.0.0.1.
func New() (p *Port, err error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			unix.Close(fd)
		}
	}()
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); err != nil {
		return nil, err
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return nil, err
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return nil, err
	}
	return &Port{fd: fd, port: sa.(*unix.SockaddrInet4).Port}, nil
}

// Addr is the port's address, host:port.
func (p *Port) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port)) }

// Listen listens on the port. Once the listener is closed, and every
// copy of its descriptor, connections to the port are refused again.
func (p *Port) Listen() (*net.TCPListener, error) {
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var err error
		if cerr := c.Control(func(fd uintptr) {
			err = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
		}); cerr != nil {
			return cerr
		}
		return err
	}}
	ln, err := lc.Listen(context.Background(), "tcp4", p.Addr())
	if err != nil {
		return nil, err
	}
	return ln.(*net.TCPListener), nil
}

// Close lets the port go.
func (p *Port) Close() error { return unix.Close(p.fd) }
