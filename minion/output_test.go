package minion

import (
	"strings"
	"testing"
)

// TestOutputCutOrder has both streams overflow before anything is sent:
// the head goes first, then each stream's cut, each alone in its update
// with what follows it, and every byte is either sent or told as cut.
func TestOutputCutOrder(t *testing.T) {
	o := newOutput(200) // a head of 100, tails of 100 less the mark's room
	o.add([]byte("H"+strings.Repeat("o", 299)), []byte("E"+strings.Repeat("e", 299)))
	type sent struct {
		stdout, stderr string
		cut            int64
	}
	var got []sent
	for range 10 {
		u, last := o.next(1<<20, true)
		got = append(got, sent{string(u.stdout.data), string(u.stderr.data), u.cut()})
		o.sent(u)
		if last {
			break
		}
	}
	if o.pending() {
		t.Fatalf("output still pending after %d updates: %+v", len(got), got)
	}
	if len(got) != 3 {
		t.Fatalf("got %d updates %+v, want 3: the head, the stdout cut, the stderr cut", len(got), got)
	}
	if g := got[0]; g.stdout != "H"+strings.Repeat("o", 99) || g.stderr != "" || g.cut != 0 {
		t.Errorf("first update %+v, want the head of stdout alone, no cut", g)
	}
	if g := got[1]; g.stderr != "" || g.cut != 200-int64(len(g.stdout)) || g.cut <= 0 {
		t.Errorf("second update %+v, want stdout's cut and tail alone", g)
	}
	if g := got[2]; g.stdout != "" || g.cut != 300-int64(len(g.stderr)) || g.cut <= 0 || strings.Contains(g.stderr, "E") {
		t.Errorf("third update %+v, want stderr's cut and tail alone", g)
	}
}
