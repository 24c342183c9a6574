package confgit

import (
	"context"
	"runtime"
	"testing"
	"time"

	"lorrycontroller.dev/lc/confgit/confgittest"
)

// readHeldPerLorry is the most heap a read may take for each lorry it
// reads, beyond the batches it hands out: what it keeps of every lorry
// until its end, to find a second definition of a path. Kept as a map of
// path to file, that was 75 bytes a lorry of this shape; as pathSet
// keeps it, 40.
const readHeldPerLorry = 56

// TestReadHeldMemoryPerLorry reads a configuration of 100,000 lorries in
// batches and measures the heap live at two points of the read: what it
// grew by between them, for each lorry read meanwhile, is what the read
// keeps of each lorry to its end, which at a million lorries is most of
// what the read holds. What the read holds whatever the number of
// lorries (the caches of the pack, a batch or two) is live at both
// points, and does not count.
//
// The batches are handed out on the goroutine that reads, as ReadEach's
// walk hands them to its pipe: it waits while each measures.
func TestReadHeldMemoryPerLorry(t *testing.T) {
	const files, perFile = 10_000, 10
	src := &Source{Dir: confgittest.BigRepo(t, files, perFile)}
	repo, hash, err := src.head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tr, done, err := commitTree(repo, hash)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	marks := map[int]*runtime.MemStats{20_000: nil, files*perFile - 3000: nil}
	n := 0
	_, err = walk(context.Background(), tr, time.Now(), 1000, false, nil, func(ls []Lorry) error {
		n += len(ls)
		if _, ok := marks[n]; ok {
			var m runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m)
			marks[n] = &m
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	from, to := marks[20_000], marks[files*perFile-3000]
	if n != files*perFile || from == nil || to == nil {
		t.Fatalf("read %d lorries, in batches of other sizes than 1,000; want %d", n, files*perFile)
	}
	per := (int64(to.HeapAlloc) - int64(from.HeapAlloc)) / (files*perFile - 3000 - 20_000)
	t.Logf("the read kept %d bytes a lorry", per)
	if per > readHeldPerLorry {
		t.Errorf("the read kept %d bytes a lorry until its end; want at most %d", per, readHeldPerLorry)
	}
}
