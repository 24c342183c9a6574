package heldport

import (
	"errors"
	"net"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestPort checks what the tests that stop servers rely on: once a server's
// listener closes, its port is still held, without a moment free, so
// that connections to it are refused and nothing else can bind it.
func TestPort(t *testing.T) {
	p, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ln, err := p.Listen()
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().(*net.TCPAddr)
	bindPlain := func() error {
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer syscall.Close(fd)
		return syscall.Bind(fd, &syscall.SockaddrInet4{Port: addr.Port, Addr: [4]byte{127, 0, 0, 1}})
	}
	if err := bindPlain(); !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("bind beside the listener: %v, want EADDRINUSE", err)
	}
	ln.Close()
	if err := bindPlain(); !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("bind after the listener closed: %v, want EADDRINUSE", err)
	}
	// A connection elsewhere whose own port could only be the held one
	// must not get it (Linux 6.3 and later can narrow one socket's range).
	other, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	err = syscall.SetsockoptInt(fd, syscall.SOL_IP, unix.IP_LOCAL_PORT_RANGE, addr.Port<<16|addr.Port)
	switch {
	case errors.Is(err, syscall.ENOPROTOOPT):
		t.Log("this kernel cannot narrow a socket's port range; skipping the connection's own port")
	case err != nil:
		t.Fatal(err)
	default:
		to := other.Addr().(*net.TCPAddr)
		err := syscall.Connect(fd, &syscall.SockaddrInet4{Port: to.Port, Addr: [4]byte{127, 0, 0, 1}})
		if !errors.Is(err, syscall.EADDRNOTAVAIL) {
			t.Fatalf("a connection whose own port could only be the held one: %v, want EADDRNOTAVAIL", err)
		}
	}
	c, err := net.Dial("tcp4", addr.String())
	if err == nil {
		c.Close()
		t.Fatal("a connection to the closed server's port was accepted")
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("connect after the listener closed: %v, want ECONNREFUSED", err)
	}
}

// TestListenAgain listens on the port again after its listener closed,
// as a server started again on its address does.
func TestListenAgain(t *testing.T) {
	p, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for range 3 {
		ln, err := p.Listen()
		if err != nil {
			t.Fatal(err)
		}
		if got := ln.Addr().String(); got != p.Addr() {
			t.Fatalf("listener on %s, want %s", got, p.Addr())
		}
		go func() {
			if c, err := ln.Accept(); err == nil {
				c.Close()
			}
		}()
		c, err := net.Dial("tcp4", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		ln.Close()
	}
}
