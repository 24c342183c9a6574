// Package spool keeps what a capped store will keep of a stream that may
// be too big to hold in memory: its first bytes and its last ones. The
// WEBAPP spools a job's output from a request body this way, so that the
// body is never held whole and the database write that follows reads it
// back in pieces.
package spool

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// Spool keeps the first head bytes written to it and the last tail bytes
// after those, in memory while they are few and in an unlinked temporary
// file beyond that. It counts everything written.
type Spool struct {
	head, tail int64
	n          int64 // bytes written

	// The store holds the head at [0, head) and the tail as a ring at
	// [head, head+tail).
	mem    []byte
	memMax int
	dir    string
	f      *os.File
}

// New makes a spool that keeps head bytes of the start and tail bytes of
// the end, holding up to memMax bytes in memory and the rest in a
// temporary file in dir ("" for the default).
func New(head, tail int64, memMax int, dir string) *Spool {
	return &Spool{head: head, tail: tail, memMax: memMax, dir: dir}
}

// Len is how many bytes were written.
func (s *Spool) Len() int64 { return s.n }

// Write keeps what it must of p.
func (s *Spool) Write(p []byte) (int, error) {
	written := len(p)
	for len(p) > 0 {
		if s.n < s.head {
			k := min(int64(len(p)), s.head-s.n)
			if err := s.writeAt(p[:k], s.n); err != nil {
				return 0, err
			}
			s.n += k
			p = p[k:]
			continue
		}
		if s.tail == 0 {
			s.n += int64(len(p))
			break
		}
		// Only the last tail bytes of p can be kept.
		if drop := int64(len(p)) - s.tail; drop > 0 {
			s.n += drop
			p = p[drop:]
		}
		pos := (s.n - s.head) % s.tail
		k := min(int64(len(p)), s.tail-pos)
		if err := s.writeAt(p[:k], s.head+pos); err != nil {
			return 0, err
		}
		s.n += k
		p = p[k:]
	}
	return written, nil
}

// ReadAt reads the bytes written at off. Only those kept can be read: the
// first head bytes, and the last tail bytes of those after them.
func (s *Spool) ReadAt(b []byte, off int64) (int, error) {
	if off < 0 || off+int64(len(b)) > s.n {
		return 0, fmt.Errorf("spool: read %d bytes at %d of %d: %w", len(b), off, s.n, io.EOF)
	}
	done := 0
	for done < len(b) {
		o := off + int64(done)
		var at, k int64
		switch {
		case o < s.head:
			at, k = o, min(int64(len(b)-done), s.head-o)
		case o >= s.n-s.tail:
			pos := (o - s.head) % s.tail
			at, k = s.head+pos, min(int64(len(b)-done), s.tail-pos)
		default:
			return done, fmt.Errorf("spool: byte %d of %d was not kept", o, s.n)
		}
		if err := s.readAt(b[done:done+int(k)], at); err != nil {
			return done, err
		}
		done += int(k)
	}
	return done, nil
}

func (s *Spool) writeAt(p []byte, at int64) error {
	end := at + int64(len(p))
	if s.f == nil && end <= int64(s.memMax) {
		if end > int64(len(s.mem)) {
			s.mem = append(s.mem, make([]byte, end-int64(len(s.mem)))...)
		}
		copy(s.mem[at:], p)
		return nil
	}
	if s.f == nil {
		f, err := os.CreateTemp(s.dir, "lorry-controller-spool-*")
		if err != nil {
			return fmt.Errorf("spool: %w", err)
		}
		// Unlinked at once: the file goes with the process, whatever
		// becomes of it.
		os.Remove(f.Name())
		if _, err := f.WriteAt(s.mem, 0); err != nil {
			f.Close()
			return fmt.Errorf("spool: %w", err)
		}
		s.f, s.mem = f, nil
	}
	if _, err := s.f.WriteAt(p, at); err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	return nil
}

func (s *Spool) readAt(b []byte, at int64) error {
	if s.f == nil {
		copy(b, s.mem[at:])
		return nil
	}
	_, err := s.f.ReadAt(b, at)
	if errors.Is(err, io.EOF) {
		err = nil // ReadAt answers EOF with the last byte of the file
	}
	return err
}

// Close frees the spool's memory and file.
func (s *Spool) Close() error {
	s.mem = nil
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}
