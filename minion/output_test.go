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

// TestOutputOffsets checks where each update's output starts in its
// stream: after what the WEBAPP acknowledged, the same again until it
// does, and after what it said it lacks, which goes as cut.
func TestOutputOffsets(t *testing.T) {
	o := newOutput(1 << 20)
	o.add([]byte("out1\n"), []byte("err1\n"))
	u, _ := o.next(1<<10, false)
	if u.stdout.offset != 0 || u.stderr.offset != 0 {
		t.Fatalf("first update at %d and %d; want 0 and 0", u.stdout.offset, u.stderr.offset)
	}
	o.sent(u)
	o.add([]byte("out2\n"), nil)
	u, _ = o.next(1<<10, false)
	// Its answer is lost: the same update goes again, with more.
	o.add([]byte("out3\n"), []byte("err2\n"))
	again, _ := o.next(1<<10, false)
	if u.stdout.offset != 5 || again.stdout.offset != 5 || again.stderr.offset != 5 || string(again.stdout.data) != "out2\nout3\n" {
		t.Fatalf("update sent again: %q at %d, %d; want out2 and out3 at 5, 5", again.stdout.data, again.stdout.offset, again.stderr.offset)
	}
	o.sent(again)
	// The WEBAPP says it has 5 and 10 bytes: the 10 of stdout past its 5
	// are gone, and go as cut.
	o.rewind(5, 10)
	o.add([]byte("out4\n"), nil)
	u, _ = o.next(1<<10, false)
	if u.stdout.offset != 15 || u.stderr.offset != 10 || u.cut() != 10 || string(u.stdout.data) != "out4\n" {
		t.Fatalf("update after a gap: %q at %d, %d, %d cut; want out4 at 15, 10, 10 cut", u.stdout.data, u.stdout.offset, u.stderr.offset, u.cut())
	}
	o.sent(u)
	if u, _ := o.next(1<<10, false); u.stdout.offset != 20 || u.cut() != 0 || o.pending() {
		t.Errorf("after the gap's update: at %d, %d cut, pending %v; want 20, none, nothing pending", u.stdout.offset, u.cut(), o.pending())
	}
}

// TestOutputWholeLines writes lines to both streams in two pieces, split at
// every byte, and checks that an update of the running job carries only
// whole lines, each ending in "\n" or "\r", and the final update the rest:
// the WEBAPP redacts each update on its own, a line at a time.
func TestOutputWholeLines(t *testing.T) {
	text := "fetching https://user:Pa55w0rd-x@git.example/x.git\r\nCounting: 50%\rCounting: 100%\ndone ✓ é"
	for _, budget := range []int{1 << 10, 100} {
		for i := range len(text) + 1 {
			o := newOutput(1 << 20)
			var got [2]strings.Builder
			var offset [2]int64
			send := func(final bool) {
				t.Helper()
				for {
					u, last := o.next(budget, final)
					for k, p := range []piece{u.stdout, u.stderr} {
						d := string(p.data)
						if p.offset != offset[k] {
							t.Fatalf("budget %d, split at %d: piece %q at %d, want at %d", budget, i, d, p.offset, offset[k])
						}
						offset[k] += int64(len(d))
						got[k].WriteString(d)
						whole := strings.HasSuffix(d, "\n") || strings.HasSuffix(d, "\r")
						if d != "" && !whole && !(final && last) {
							t.Fatalf("budget %d, split at %d: final %v update carries %q, which ends inside a line", budget, i, final, d)
						}
					}
					o.sent(u)
					if last || !final && !o.backlog() {
						return
					}
				}
			}
			o.add([]byte(text[:i]), []byte(text[:i]))
			send(false)
			o.add([]byte(text[i:]), []byte(text[i:]))
			send(false)
			send(true)
			for k, name := range []string{"stdout", "stderr"} {
				if got[k].String() != text {
					t.Errorf("budget %d, split at %d: %s sent %q, want %q", budget, i, name, got[k].String(), text)
				}
			}
			if o.pending() {
				t.Errorf("budget %d, split at %d: output still pending after the final update", budget, i)
			}
		}
	}
}

// TestOutputLongLine checks that a line longer than maxHeldLine is sent
// as it comes, not held until it ends, and that a running job's output
// without a line break waits for it.
func TestOutputLongLine(t *testing.T) {
	o := newOutput(1 << 20)
	o.add([]byte("no line break yet"), nil)
	if u, _ := o.next(1<<20, false); len(u.stdout.data) != 0 || o.backlog() {
		t.Fatalf("update carries %q, backlog %v; want nothing, none", u.stdout.data, o.backlog())
	}
	long := strings.Repeat("x", maxHeldLine)
	o.add([]byte(long), nil)
	u, _ := o.next(1<<20, false)
	if want := "no line break yet" + long; string(u.stdout.data) != want {
		t.Fatalf("update carries %d bytes, want the %d of the line held past its bound", len(u.stdout.data), len(want))
	}
}
