package statedb

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"lorrycontroller.dev/lc/gittest"
)

// foldPieces folds data given in pieces, as updates bring it, and ends it
// as a job's end does.
func foldPieces(pieces ...string) string {
	var out, carry []byte
	for _, p := range pieces {
		var o []byte
		o, carry = foldCR(carry, []byte(p))
		out = append(out, o...)
	}
	return string(append(out, finishCR(carry)...))
}

var foldTests = []struct {
	name, in, want string
}{
	{name: "plain lines", in: "one\ntwo\n", want: "one\ntwo\n"},
	{name: "no line end", in: "one\ntwo", want: "one\ntwo"},
	{name: "progress", in: "Counting:  50% (1/2)\rCounting: 100% (2/2)\rCounting: 100% (2/2), done.\nnext\n",
		want: "Counting: 100% (2/2), done.\nnext\n"},
	{name: "carriage return first", in: "\r 10%\r 20%\r100%\ndone\n", want: "100%\ndone\n"},
	{name: "CRLF", in: "one\r\ntwo\r\n", want: "one\r\ntwo\r\n"},
	{name: "progress then CRLF", in: "50%\r100%\r\nnext\n", want: "100%\r\nnext\n"},
	{name: "ends with a carriage return", in: "a\n 50%\r100%\r", want: "a\n100%"},
	{name: "ends mid-rewrite", in: "a\n 50%\r10", want: "a\n10"},
	{name: "two carriage returns", in: "50%\r\r100%\n", want: "100%\n"},
	{name: "empty lines", in: "\n\r\n\n", want: "\n\r\n\n"},
	{name: "shorter rewrite", in: "Receiving objects: 100%\rdone\n", want: "done\n"},
}

// Each line keeps its last state, wherever the output is cut into pieces
// once a line has shown a carriage return: a piece is a job's writes, and
// a progress meter writes each state whole.
func TestFoldCR(t *testing.T) {
	for _, tc := range foldTests {
		t.Run(tc.name, func(t *testing.T) {
			if got := foldPieces(tc.in); got != tc.want {
				t.Errorf("in one piece: got %q, want %q", got, tc.want)
			}
			for i := 1; i < len(tc.in); i++ {
				line := tc.in[strings.LastIndexByte(tc.in[:i], '\n')+1 : i]
				if line != "" && !strings.Contains(line, "\r") {
					continue // the piece would end in a line's first state
				}
				if got := foldPieces(tc.in[:i], tc.in[i:]); got != tc.want {
					t.Errorf("in pieces %q and %q: got %q, want %q", tc.in[:i], tc.in[i:], got, tc.want)
				}
			}
			// Byte by byte, after the first carriage return.
			if i := strings.IndexByte(tc.in, '\r'); i >= 0 {
				pieces := []string{tc.in[:i+1]}
				for _, c := range []byte(tc.in[i+1:]) {
					pieces = append(pieces, string(c))
				}
				if got := foldPieces(pieces...); got != tc.want {
					t.Errorf("byte by byte: got %q, want %q", got, tc.want)
				}
			}
		})
	}
}

// A line longer than can be held is stored as it is, and the output goes
// on from there.
func TestFoldCRLongLine(t *testing.T) {
	long := strings.Repeat("x", maxCarry+10)
	out, carry := foldCR(nil, []byte("\r"+long+"\r"))
	if string(out) != long || string(carry) != "\r" {
		t.Fatalf("got %d bytes out and carry %q; want the %d bytes of the line, and carry \"\\r\"", len(out), carry, len(long))
	}
	if got := foldPieces("\r"+long+"\r", "end\n"); got != long+"end\n" {
		t.Errorf("got %q, want the long line then %q", got, "end\n")
	}
}

// The stored output, the API's and the pages', keeps only the last state
// of each line, across job-update calls, and what held back is stored at
// the job's end.
func TestJobOutputFoldsCarriageReturns(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	f.lorries(t, "a")
	a := f.mustGive(t, m1)
	id := a.Job.ID
	pieces := []JobUpdate{
		{Stdout: []byte("fetching\n"), Stderr: []byte("Receiving objects:  33% (1/3)\r")},
		{Stderr: []byte("Receiving objects:  66% (2/3)\rReceiving objects: 100% (3/3)\r")},
		{Stderr: []byte("Receiving objects: 100% (3/3), done.\r")},
		{Stderr: []byte("\nwindows line\r")},
		{Stderr: []byte("\nResolving deltas:  50%\r")},
	}
	for i, u := range pieces {
		u.ID, u.Minion = id, m1
		if _, err := f.report(t, u); err != nil {
			t.Fatalf("update %d: %v", i, err)
		}
	}
	f.view(t, func(tx *Tx) error {
		// The held line shows in the API's output and as the job's latest
		// line, but not yet in what a page that follows the job has read.
		out, err := tx.Output(ctx, id)
		want := "fetching\nReceiving objects: 100% (3/3), done.\r\nwindows line\r\nResolving deltas:  50%"
		if out != want || err != nil {
			t.Errorf("Output while running = %q, %v; want %q", out, err, want)
		}
		part, err := tx.OutputFrom(ctx, id, 0)
		want = "fetching\nReceiving objects: 100% (3/3), done.\r\nwindows line\r\n"
		if part.Text != want || part.Next != int64(len(want)) || err != nil {
			t.Errorf("OutputFrom(0) = %q (next %d), %v; want %q (next %d)", part.Text, part.Next, err, want, len(want))
		}
		line, err := tx.LastOutputLine(ctx, id)
		if line != "Resolving deltas:  50%" || err != nil {
			t.Errorf("LastOutputLine = %q, %v; want %q", line, err, "Resolving deltas:  50%")
		}
		return nil
	})
	exit := int64(1)
	if _, err := f.report(t, JobUpdate{ID: id, Minion: m1, Exit: &exit, Stderr: []byte("\rResolving deltas: 100%\r")}); err != nil {
		t.Fatal(err)
	}
	want := "fetching\nReceiving objects: 100% (3/3), done.\r\nwindows line\r\nResolving deltas: 100%"
	f.view(t, func(tx *Tx) error {
		out, err := tx.Output(ctx, id)
		if out != want || err != nil {
			t.Errorf("Output once ended = %q, %v; want %q", out, err, want)
		}
		part, err := tx.OutputFrom(ctx, id, 0)
		if part.Text != want || part.Next != int64(len(want)) || err != nil {
			t.Errorf("OutputFrom(0) once ended = %q (next %d), %v; want %q", part.Text, part.Next, err, want)
		}
		return nil
	})
	if j := f.job(t, id); j.OutputBytes != int64(len(want)) || len(j.carry) != 0 {
		t.Errorf("output_bytes %d, carry %q; want %d, none", j.OutputBytes, j.carry, len(want))
	}
	if l := f.lorry(t, "a"); !strings.HasSuffix(l.LastRunError, "Resolving deltas: 100%") {
		t.Errorf("last_run_error = %q; want it to end with the last state of the progress line", l.LastRunError)
	}
}

// What git clone --progress prints, read from its pipe as a minion reads
// it and sent one read at a time, is stored with each progress line in its
// last state.
func TestJobOutputFoldsGitProgress(t *testing.T) {
	dir := t.TempDir()
	up := filepath.Join(dir, "up")
	gittest.Git(t, dir, nil, "init", "-q", up)
	for i := range 40 {
		name := fmt.Sprintf("f%02d", i)
		if err := os.WriteFile(filepath.Join(up, name), []byte(strings.Repeat(name, 100)), 0o644); err != nil {
			t.Fatal(err)
		}
		gittest.Git(t, up, nil, "add", name)
		gittest.Git(t, up, nil, "commit", "-q", "-m", name)
	}
	cmd := exec.Command("git", "clone", "--progress", "--bare", "file://"+up, filepath.Join(dir, "clone.git"))
	cmd.Env = append(os.Environ(), gittest.GitEnv...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}

	f := newFixture(t, Options{})
	f.lorries(t, "a")
	a := f.mustGive(t, m1)
	var raw bytes.Buffer
	buf := make([]byte, 64<<10)
	for {
		n, err := stderr.Read(buf)
		if n > 0 {
			raw.Write(buf[:n])
			if _, err := f.report(t, JobUpdate{ID: a.Job.ID, Minion: m1, Stderr: append([]byte(nil), buf[:n]...)}); err != nil {
				t.Fatal(err)
			}
		}
		if err != nil {
			break
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, raw.String())
	}
	if !bytes.Contains(raw.Bytes(), []byte("\r")) {
		t.Fatalf("git printed no progress to fold:\n%q", raw.String())
	}
	exit := int64(0)
	if _, err := f.report(t, JobUpdate{ID: a.Job.ID, Minion: m1, Exit: &exit}); err != nil {
		t.Fatal(err)
	}
	var out string
	f.view(t, func(tx *Tx) error {
		out, err = tx.Output(context.Background(), a.Job.ID)
		return err
	})
	if strings.Contains(out, "\r") {
		t.Errorf("output keeps carriage returns:\n%q", out)
	}
	// Every line of the output is the last state of a line git printed,
	// and git printed no line that the output leaves out.
	var want []string
	for _, line := range strings.SplitAfter(raw.String(), "\n") {
		body := strings.TrimRight(strings.TrimSuffix(line, "\n"), "\r")
		if i := strings.LastIndexByte(body, '\r'); i >= 0 {
			line = line[i+1:]
		}
		want = append(want, line)
	}
	if got := strings.Join(want, ""); out != got {
		t.Errorf("output:\n%s\nwant:\n%s", out, got)
	}
	if !strings.Contains(out, "objects: 100% (") {
		t.Errorf("output lacks the last state of the progress lines:\n%s", out)
	}
}
