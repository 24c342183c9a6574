package statedb

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestLastOutputLine(t *testing.T) {
	f := newFixture(t, Options{})
	f.lorries(t, "o/a")
	a := f.mustGive(t, m1)
	tests := []struct {
		name   string
		output string
		want   string
	}{
		{name: "no output yet", want: ""},
		{name: "lines", output: "first\nsecond\n", want: "second"},
		{name: "blank lines after", output: "third\n\n  \n", want: "third"},
		{name: "progress meter", output: "Receiving objects:  10%\rReceiving objects:  55%\r", want: "Receiving objects:  55%"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := f.report(t, JobUpdate{ID: a.Job.ID, Stdout: []byte(tc.output)}); err != nil {
				t.Fatal(err)
			}
			f.view(t, func(tx *Tx) error {
				got, err := tx.LastOutputLine(context.Background(), a.Job.ID)
				if got != tc.want || err != nil {
					t.Errorf("LastOutputLine = %q, %v; want %q", got, err, tc.want)
				}
				return nil
			})
		})
	}
}

func TestOutputFrom(t *testing.T) {
	// A cap of 20 bytes: a head of 10 and a tail of 10.
	f := newFixture(t, Options{OutputLimit: 20})
	ctx := context.Background()
	f.lorries(t, "o/a")
	a := f.mustGive(t, m1)
	send := func(s string) {
		t.Helper()
		if _, err := f.report(t, JobUpdate{ID: a.Job.ID, Stdout: []byte(s)}); err != nil {
			t.Fatal(err)
		}
	}
	from := func(offset int64) OutputPart {
		t.Helper()
		var p OutputPart
		f.view(t, func(tx *Tx) error {
			var err error
			p, err = tx.OutputFrom(ctx, a.Job.ID, offset)
			return err
		})
		return p
	}
	check := func(name string, offset int64, wantText string, wantNext int64) {
		t.Helper()
		p := from(offset)
		if p.Text != wantText || p.Next != wantNext {
			t.Errorf("%s: OutputFrom(%d) = %q, next %d; want %q, next %d", name, offset, p.Text, p.Next, wantText, wantNext)
		}
	}
	check("no output", 0, "", 0)
	send("0123")
	send("4567")
	check("all", 0, "01234567", 8)
	check("from the middle of a chunk", 3, "34567", 8)
	check("nothing new", 8, "", 8)
	check("offset beyond the end", 50, "", 50)
	send("89abcd") // head full at "9"; "abcd" starts the tail
	check("head into tail", 6, "6789abcd", 14)
	send("efghijkl") // tail "abcdefghijkl" is over 10: "abcd" is cut
	check("whole output", 0, "0123456789\n[... 4 bytes of output cut ...]\nefghijkl", 22)
	check("from inside the cut", 12, "\n[... 2 bytes of output cut ...]\nefghijkl", 22)
	check("from the tail", 16, "ghijkl", 22)
	// A character cut in two is held back while the job runs.
	send("\xc3")
	check("half a character", 22, "", 22)
	send("\xa9!")
	check("whole character", 22, "é!", 25)
	if _, err := f.report(t, JobUpdate{ID: a.Job.ID, Exit: exit(0), Stdout: []byte("\xe2\x82")}); err != nil {
		t.Fatal(err)
	}
	check("half a character at the end", 25, "\uFFFD", 27)
	f.view(t, func(tx *Tx) error {
		if _, err := tx.OutputFrom(ctx, 99, 0); !errors.Is(err, ErrNotFound) {
			t.Errorf("OutputFrom(99) = %v; want ErrNotFound", err)
		}
		return nil
	})
	// The whole output read from offset 0 is what Output returns.
	var whole string
	f.view(t, func(tx *Tx) error {
		var err error
		whole, err = tx.Output(ctx, a.Job.ID)
		return err
	})
	if p := from(0); p.Text != strings.ToValidUTF8(whole, "\uFFFD") {
		t.Errorf("OutputFrom(0) = %q; Output = %q", p.Text, whole)
	}
}

// TestMinionCut has the minion report a cut of its own: the job counts it
// as printed and cut, and its output shows one cut between the head and
// the tail, as when the WEBAPP cuts.
func TestMinionCut(t *testing.T) {
	// A cap of 20 bytes: a head of 10 and a tail of 10.
	f := newFixture(t, Options{OutputLimit: 20})
	ctx := context.Background()
	f.lorries(t, "o/full", "o/open")
	check := func(name string, id int64, wantOut string, wantBytes, wantCut int64) {
		t.Helper()
		f.view(t, func(tx *Tx) error {
			out, err := tx.Output(ctx, id)
			if err != nil {
				return err
			}
			if out != wantOut {
				t.Errorf("%s: output %q, want %q", name, out, wantOut)
			}
			p, err := tx.OutputFrom(ctx, id, 0)
			if err != nil {
				return err
			}
			if p.Text != wantOut || p.Next != wantBytes {
				t.Errorf("%s: OutputFrom(0) = %q, next %d; want %q, next %d", name, p.Text, p.Next, wantOut, wantBytes)
			}
			return nil
		})
		j := f.job(t, id)
		if j.OutputBytes != wantBytes || j.CutBytes != wantCut {
			t.Errorf("%s: output_bytes %d, cut_bytes %d; want %d, %d", name, j.OutputBytes, j.CutBytes, wantBytes, wantCut)
		}
	}

	full := f.mustGive(t, m1)
	if _, err := f.report(t, JobUpdate{ID: full.Job.ID, Minion: m1, Stdout: []byte("0123456789ab")}); err != nil {
		t.Fatal(err)
	}
	// The tail kept so far came before the minion's cut, and goes with it.
	if _, err := f.report(t, JobUpdate{ID: full.Job.ID, Minion: m1, CutBytes: 100, Stdout: []byte("XYZ")}); err != nil {
		t.Fatal(err)
	}
	check("after a full head", full.Job.ID, "0123456789\n[... 102 bytes of output cut ...]\nXYZ", 115, 102)
	if _, err := f.report(t, JobUpdate{ID: full.Job.ID, Minion: m1, Exit: exit(0), Stderr: []byte("end")}); err != nil {
		t.Fatal(err)
	}
	check("ended", full.Job.ID, "0123456789\n[... 102 bytes of output cut ...]\nXYZend", 118, 102)

	// A head not yet full (lines that carriage returns rewrote are
	// folded here, not by the minion) ends at the cut.
	m2 := MinionID{Name: "m2", Host: "h", PID: 2}
	open := f.mustGive(t, m2)
	if _, err := f.report(t, JobUpdate{ID: open.Job.ID, Minion: m2, Stdout: []byte("01")}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.report(t, JobUpdate{ID: open.Job.ID, Minion: m2, CutBytes: 50}); err != nil {
		t.Fatal(err)
	}
	check("only the cut", open.Job.ID, "01\n[... 50 bytes of output cut ...]\n", 52, 50)
	if _, err := f.report(t, JobUpdate{ID: open.Job.ID, Minion: m2, Stdout: []byte("tail")}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.report(t, JobUpdate{ID: open.Job.ID, Minion: m2, Stdout: []byte("more")}); err != nil {
		t.Fatal(err)
	}
	check("tail after the cut", open.Job.ID, "01\n[... 50 bytes of output cut ...]\ntailmore", 60, 50)
}

// TestLastOutputLinesAsEachAlone reads the last lines of many running
// jobs at once, as the status page does, and finds for each what
// LastOutputLine finds for it alone: whatever its output's chunks, few
// or many, small or large, cut inside a character, with a progress
// meter's line held back or none.
func TestLastOutputLinesAsEachAlone(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	outputs := [][]string{
		nil,
		{"first\nsecond\n"},
		repeat(20, func(i int) string { return fmt.Sprintf("line %d\n", i) }),
		repeat(8, func(i int) string { return strings.Repeat("x", 190) + fmt.Sprintf(" %d\n", i) }),
		repeat(9, func(i int) string { return strings.Repeat("y", 150) + fmt.Sprintf(" %d\n", i) }),
		{strings.Repeat("a", 3000) + "\nlast line\n", "Receiving objects:  10%\rReceiving objects:  50%\r"},
		{strings.Repeat("é", 2000) + "\n"},
		{"\n\n  \n"},
		{"Counting: 1\rCounting: 2"},
	}
	var paths []string
	for i := range outputs {
		paths = append(paths, fmt.Sprintf("o/%d", i))
	}
	f.lorries(t, paths...)
	var ids []int64
	for i, out := range outputs {
		a := f.mustGive(t, minion(fmt.Sprintf("m%d", i), "h"))
		for _, s := range out {
			if _, err := f.report(t, JobUpdate{ID: a.Job.ID, Stdout: []byte(s)}); err != nil {
				t.Fatal(err)
			}
		}
		ids = append(ids, a.Job.ID)
	}
	f.view(t, func(tx *Tx) error {
		got, err := tx.LastOutputLines(ctx, append(ids, 999999))
		if err != nil {
			return err
		}
		for i, id := range ids {
			want, err := tx.LastOutputLine(ctx, id)
			if err != nil {
				return err
			}
			if got[id] != want {
				t.Errorf("job %d (output %d): %q; alone %q", id, i, got[id], want)
			}
		}
		if line, ok := got[999999]; ok {
			t.Errorf("a job that is not there: %q", line)
		}
		return nil
	})
}

func repeat(n int, f func(int) string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}
