package confgit

import (
	"encoding/binary"
	"hash/maphash"
)

// pathSet is the set of lorry paths a read has defined so far, with the
// file that defined each, so that a second definition of a path is
// refused with the name of the first. It holds every path of the
// configuration until the read ends: as a map of path to file name it
// took 84 MiB of a first read of a million lorries, and the garbage
// collector followed its pointers at every cycle. Here each path is
// copied, after the index of its file and its length, end to end into
// chunks of bytes, and found through a map from a 32-bit hash of the path
// to where it is: no pointer in either, and less than half the memory.
//
// It is exact: a path whose hash an earlier, different path has (about a
// hundred in a million), or one too long for a chunk, is kept in a map of
// its own, looked in after the first.
type pathSet struct {
	hash   func(string) uint32
	byHash map[uint32]uint32 // chunk<<pathChunkBits | offset in the chunk
	// others are the paths not in byHash, with the index of their file.
	others map[string]int
	// chunks hold the paths of byHash, each after the index of its file
	// and its length (uvarints); a chunk is never grown past its
	// capacity, so that its bytes never move.
	chunks [][]byte
	// files are the files that defined the paths, in the order they
	// were first given.
	files []string
}

// pathChunkBits sizes the chunks of pathSet: up to 1 MiB each, allocated
// once, whole, and up to 4,096 of them (4 GiB of paths) can be addressed
// by the 32 bits of byHash's values.
const pathChunkBits = 20

func newPathSet() *pathSet {
	seed := maphash.MakeSeed()
	return &pathSet{
		hash:   func(p string) uint32 { h := maphash.String(seed, p); return uint32(h ^ h>>32) },
		byHash: map[uint32]uint32{},
		others: map[string]int{},
	}
}

// find answers the file that defined path p, if it is in the set.
func (s *pathSet) find(p string) (file string, ok bool) {
	if at, ok := s.byHash[s.hash(p)]; ok {
		if f, held := s.at(at); string(held) == p {
			return s.files[f], true
		}
	}
	if f, ok := s.others[p]; ok {
		return s.files[f], true
	}
	return "", false
}

// add adds path p, which is not in the set, defined by file.
func (s *pathSet) add(p, file string) {
	if n := len(s.files); n == 0 || s.files[n-1] != file {
		s.files = append(s.files, file)
	}
	f := len(s.files) - 1
	h := s.hash(p)
	if _, taken := s.byHash[h]; !taken {
		if at, ok := s.store(f, p); ok {
			s.byHash[h] = at
			return
		}
	}
	s.others[p] = f
}

// at is the index of the file and the path kept at at, the chunk's own
// bytes.
func (s *pathSet) at(at uint32) (file int, path []byte) {
	c := s.chunks[at>>pathChunkBits][at&(1<<pathChunkBits-1):]
	f, k := binary.Uvarint(c)
	c = c[k:]
	n, k := binary.Uvarint(c)
	return int(f), c[k : k+int(n)]
}

// store copies file's index f and p into the last chunk, or a new one,
// and answers where; not ok if they do not fit in a chunk, or the chunks
// cannot be addressed.
func (s *pathSet) store(f int, p string) (uint32, bool) {
	const size = 1 << pathChunkBits
	need := 2*binary.MaxVarintLen64 + len(p)
	if need > size {
		return 0, false
	}
	last := len(s.chunks) - 1
	if last < 0 || cap(s.chunks[last])-len(s.chunks[last]) < need {
		if len(s.chunks) == 1<<(32-pathChunkBits) {
			return 0, false
		}
		// The first chunks are small, for the few paths of a change or a
		// check: each is twice the last, up to size.
		n := 4 << 10
		if last >= 0 {
			n = min(size, 2*cap(s.chunks[last]))
		}
		s.chunks = append(s.chunks, make([]byte, 0, max(n, need)))
		last++
	}
	c := s.chunks[last]
	at := uint32(last)<<pathChunkBits | uint32(len(c))
	c = binary.AppendUvarint(c, uint64(f))
	c = binary.AppendUvarint(c, uint64(len(p)))
	s.chunks[last] = append(c, p...)
	return at, true
}
