package spool

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

func TestSpoolKeepsHeadAndTail(t *testing.T) {
	tests := []struct {
		name       string
		head, tail int64
		memMax     int
		writes     []int
	}{
		{name: "all kept, in memory", head: 10, tail: 10, memMax: 100, writes: []int{3, 4, 5}},
		{name: "tail wraps, in memory", head: 10, tail: 10, memMax: 100, writes: []int{7, 7, 7, 7, 3}},
		{name: "one big write", head: 10, tail: 10, memMax: 100, writes: []int{1000}},
		{name: "to a file", head: 100, tail: 100, memMax: 30, writes: []int{20, 50, 333, 1, 77}},
		{name: "no tail", head: 5, tail: 0, memMax: 30, writes: []int{3, 9}},
	}
	for _, tc := range tests {
		s := New(tc.head, tc.tail, tc.memMax, t.TempDir())
		var all []byte
		for _, n := range tc.writes {
			p := make([]byte, n)
			for i := range p {
				p[i] = byte(rand.IntN(256))
			}
			all = append(all, p...)
			if _, err := s.Write(p); err != nil {
				t.Fatalf("%s: Write: %v", tc.name, err)
			}
		}
		if s.Len() != int64(len(all)) {
			t.Errorf("%s: Len = %d; want %d", tc.name, s.Len(), len(all))
		}
		n := int64(len(all))
		h := min(tc.head, n)
		got := make([]byte, h)
		if _, err := s.ReadAt(got, 0); err != nil || !bytes.Equal(got, all[:h]) {
			t.Errorf("%s: head = %v %x; want %x", tc.name, err, got, all[:h])
		}
		from := max(h, n-tc.tail)
		got = make([]byte, n-from)
		if _, err := s.ReadAt(got, from); err != nil || !bytes.Equal(got, all[from:]) {
			t.Errorf("%s: tail = %v %x; want %x", tc.name, err, got, all[from:])
		}
		if from > h {
			if _, err := s.ReadAt(make([]byte, 1), h); err == nil {
				t.Errorf("%s: read of a byte not kept succeeded", tc.name)
			}
		}
		if (s.f != nil) != (tc.head+tc.tail > int64(tc.memMax) && n > int64(tc.memMax)) {
			t.Errorf("%s: in a file = %v", tc.name, s.f != nil)
		}
		s.Close()
	}
}
