package rules

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"lorrycontroller.dev/lc/wire"
)

// TestPickHead tries random sets of open queues and heads: the entry
// chosen is the first in the run queue among the open queues' heads, and
// none is chosen only when no open queue has one.
func TestPickHead(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		open := map[string]string{}
		heads := map[string]int64{}
		for i := range r.IntN(8) {
			name := fmt.Sprint("q", i)
			if r.IntN(3) > 0 {
				open[name] = "fifo"
			}
			if r.IntN(2) > 0 {
				heads[name] = r.Int64N(20)
			}
		}
		pos, ok := PickHead(open, func(q string) (int64, bool) { p, has := heads[q]; return p, has })
		want, wantOK := int64(0), false
		for q, p := range heads {
			if _, isOpen := open[q]; isOpen && (!wantOK || p < want) {
				want, wantOK = p, true
			}
		}
		if pos != want || ok != wantOK {
			t.Fatalf("PickHead(%v, %v) = %d, %v; want %d, %v", open, heads, pos, ok, want, wantOK)
		}
	}
}

func TestTakesQueue(t *testing.T) {
	names := []string{"", "a", "b", "default", "a b", "é"}
	for _, q := range names {
		for i := range names {
			for j := range names {
				queues, ignore := names[:i], names[j:]
				want := !slices.Contains(ignore, q)
				if len(queues) > 0 {
					want = slices.Contains(queues, q)
				}
				if got := TakesQueue(q, queues, ignore); got != want {
					t.Errorf("TakesQueue(%q, %q, %q) = %v; want %v", q, queues, ignore, got, want)
				}
			}
		}
	}
}

func TestOnlyKind(t *testing.T) {
	tests := []struct {
		kinds []string
		want  string
	}{
		{nil, ""},
		{[]string{wire.KindLorry}, wire.KindLorry},
		{[]string{wire.KindScraper}, wire.KindScraper},
		{[]string{wire.KindLorry, wire.KindScraper}, ""},
		{[]string{wire.KindScraper, wire.KindLorry}, ""},
	}
	for _, tt := range tests {
		if got := OnlyKind(tt.kinds); got != tt.want {
			t.Errorf("OnlyKind(%q) = %q; want %q", tt.kinds, got, tt.want)
		}
	}
}

func TestLimits(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	for running := int64(0); running < 5; running++ {
		for _, limit := range []*int64{nil, n(0), n(1), n(3)} {
			want := limit != nil && running >= *limit
			if got := QueueFull(limit, running); got != want {
				t.Errorf("QueueFull(%v, %d) = %v; want %v", limit, running, got, want)
			}
			if got := HostFull("h", running, limit) != ""; got != want {
				t.Errorf("HostFull(h, %d, %v) full = %v; want %v", running, limit, got, want)
			}
		}
	}
	if got, want := HostFull("h", 3, n(2)), "3 jobs running on host h, its max_jobs is 2"; got != want {
		t.Errorf("HostFull = %q; want %q", got, want)
	}
}

func TestIdleReasons(t *testing.T) {
	tests := []struct{ got, want string }{
		{NoOpenQueue(nil), "this minion takes none of the queues"},
		{NoOpenQueue([]string{"a", "b"}), "queues full: a, b"},
		{NoneDue("", nil), "no lorry is due in the queues this minion takes"},
		{NoneDue(wire.KindScraper, []string{"a"}), "no scraper is due in the queues this minion takes that are not full (full: a)"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q; want %q", tt.got, tt.want)
		}
	}
}

func TestOfferable(t *testing.T) {
	open := map[string]string{"a": "fifo"}
	for _, queue := range []string{"a", "b"} {
		for _, kind := range []string{wire.KindLorry, wire.KindScraper} {
			for _, take := range []string{"", wire.KindLorry, wire.KindScraper} {
				for _, running := range []bool{false, true} {
					for _, due := range []int64{9, 10, 11} {
						want := queue == "a" && (take == "" || take == kind) && !running && due <= 10
						if got := Offerable(open, take, queue, kind, running, due, 10); got != want {
							t.Errorf("Offerable(%s, take %q, %s, running %v, due %d) = %v; want %v", queue, take, kind, running, due, got, want)
						}
					}
				}
			}
		}
	}
}
