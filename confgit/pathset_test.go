package confgit

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestPathSet adds paths, some of them again, to sets whose hashes
// collide more and more, and checks every answer against a map of path to
// file: a path is found, with the file that added it, exactly when it was
// added before.
func TestPathSet(t *testing.T) {
	for _, tc := range []struct {
		name string
		hash func(string) uint32 // nil: the set's own
	}{
		{name: "own hash"},
		{name: "hash of the length", hash: func(p string) uint32 { return uint32(len(p)) }},
		{name: "hash of the last byte", hash: func(p string) uint32 { return uint32(p[len(p)-1]) }},
		{name: "one hash for all", hash: func(string) uint32 { return 7 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newPathSet()
			if tc.hash != nil {
				s.hash = tc.hash
			}
			r := rand.New(rand.NewPCG(1, 2))
			want := map[string]string{}
			var added []string
			for i := range 20_000 {
				file := fmt.Sprintf("f%d.lorry", i/7)
				var p string
				if len(added) > 0 && r.IntN(4) == 0 {
					p = added[r.IntN(len(added))]
				} else {
					p = fmt.Sprintf("s%d/%s", r.IntN(50), strings.Repeat("x", r.IntN(40))+fmt.Sprint(r.Int64()))
				}
				got, dup := s.find(p)
				first, had := want[p]
				if dup != had || got != first {
					t.Fatalf("find(%q) = %q, %v; want %q, %v", p, got, dup, first, had)
				}
				if !had {
					s.add(p, file)
					want[p] = file
					added = append(added, p)
				}
			}
		})
	}
}

// TestPathSetLongPaths adds paths around the size of a chunk, and more
// than fit in one chunk: each is found with its file, and no other.
func TestPathSetLongPaths(t *testing.T) {
	const size = 1 << pathChunkBits
	s := newPathSet()
	var paths []string
	for i, n := range []int{1, size - 20, size - 10, size, size + 1, 3, size / 2, size / 2, size / 2} {
		p := fmt.Sprintf("%d/", i) + strings.Repeat("y", n)
		if _, dup := s.find(p); dup {
			t.Fatalf("path %d (%d bytes) found before it was added", i, len(p))
		}
		s.add(p, fmt.Sprintf("f%d", i))
		paths = append(paths, p)
	}
	for i, p := range paths {
		if got, ok := s.find(p); !ok || got != fmt.Sprintf("f%d", i) {
			t.Errorf("find(path %d, %d bytes) = %q, %v; want f%d, true", i, len(p), got, ok, i)
		}
		if _, ok := s.find(p + "z"); ok {
			t.Errorf("path %d with a byte more found", i)
		}
	}
}
