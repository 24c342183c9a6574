package minion

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"
)

// TestLeaseExpires cuts the minion off from the WEBAPP while its job runs:
// once the lease has passed without a delivered update, the minion kills
// the job, group and all, within the WEBAPP's kill grace (shorter than its
// own), and reports why when the WEBAPP can be reached again, as a job
// its minion killed, not one that failed.
func TestLeaseExpires(t *testing.T) {
	f := newFakeWebapp(t)
	dir := t.TempDir()
	pidFile, childFile := filepath.Join(dir, "pid"), filepath.Join(dir, "child")
	lorry := writeLorry(t, `trap '' TERM
sh -c 'trap "" TERM; echo $$ > `+sh(childFile)+`; while :; do sleep 0.05; done' &
echo $$ > `+sh(pidFile)+`
echo started
while :; do sleep 0.05; done`)
	m, _ := newTestMinion(t, f, lorry)
	f.giveMeJob = oneJob(`{"job_id": 6, "path": "delta/cut", "kind": "lorry", "text": "{}", "lease": 1, "kill_grace": 1}`)
	var pid, child int
	f.jobUpdate = func(n int, form url.Values) (int, string) {
		if pid == 0 && strings.Contains(form.Get("stdout"), "started") {
			pid, child = readPid(t, pidFile), readPid(t, childFile)
		}
		if pid != 0 && !(gone(pid) && gone(child)) {
			return dropConnection, ""
		}
		return http.StatusOK, `{"kill": false, "lease": 1, "kill_grace": 1}`
	}
	if ran, err := runOnce(t, t.Context(), m); !ran || err != nil {
		t.Fatalf("RunOnce: got %v, %v; want true, nil", ran, err)
	}
	updates := f.delivered()
	final := updates[len(updates)-1]
	// TERM is ignored: only the WEBAPP's grace of 1s, not the minion's
	// own 10s, passes before SIGKILL.
	if got := final.Form.Get("exit"); got != "137" {
		t.Errorf("exit: got %s, want 137", got)
	}
	// The minion killed it, not the job itself: it ends killed, no
	// failure of its lorry.
	if got := final.Form.Get("stopping"); got != "true" {
		t.Errorf("stopping: got %q, want true", got)
	}
	// Why is told in the first update delivered after the kill: the
	// final one, or a running one just before it.
	var stderr string
	for _, u := range updates {
		stderr += u.Form.Get("stderr")
	}
	if got, want := stderr, "lorry-controller-minion: lease of 1s expired without reaching the WEBAPP: job killed\n"; got != want {
		t.Errorf("stderr delivered: got %q, want %q", got, want)
	}
	if !gone(child) {
		t.Errorf("the job's child %d outlived the lease", child)
	}
}

// TestOutputBounded has a job write far more than the WEBAPP keeps while the
// WEBAPP is unreachable: the minion keeps only the head and the tail that
// the WEBAPP would, delivers that, and tells the WEBAPP in cut_bytes how
// much it left out, with the update whose output follows the cut.
func TestOutputBounded(t *testing.T) {
	f := newFakeWebapp(t)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	lorry := writeLorry(t, `echo $$ > `+sh(pidFile)+`
echo HEAD
yes 'ééééééééééééééééééé' | head -n 20000
echo TAIL
echo ERRHEAD >&2
yes 'èèèèèèèèèèèèèèèèèèè' | head -n 20000 >&2
echo ERRTAIL >&2`)
	m, _ := newTestMinion(t, f, lorry)
	f.giveMeJob = oneJob(`{"job_id": 4, "path": "delta/chatty", "kind": "lorry", "text": "{}", "output_limit": 1000}`)
	// Unreachable for as long as the job lives.
	f.jobUpdate = func(n int, form url.Values) (int, string) {
		b, _ := os.ReadFile(pidFile)
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || syscall.Kill(pid, 0) == nil {
			return dropConnection, ""
		}
		return http.StatusOK, `{"kill": false}`
	}
	if ran, err := runOnce(t, t.Context(), m); !ran || err != nil {
		t.Fatalf("RunOnce: got %v, %v; want true, nil", ran, err)
	}
	updates := f.delivered()
	if got := updates[len(updates)-1].Form.Get("exit"); got != "0" {
		t.Errorf("exit: got %s, want 0", got)
	}
	out, errOut := joined(updates, "stdout"), joined(updates, "stderr")
	// The head, and a tail of each stream (a few more if an update got
	// through while the last of the output was being read).
	if len(out)+len(errOut) > 5000 {
		t.Errorf("delivered %d bytes, want about one and a half limits of 1000", len(out)+len(errOut))
	}
	if !utf8.ValidString(out) || !utf8.ValidString(errOut) {
		t.Errorf("delivered output is not valid UTF-8: %q, %q", out, errOut)
	}
	if !strings.HasPrefix(out, "HEAD\néééé") || !strings.HasSuffix(out, "éééé\nTAIL\n") || strings.Contains(out, "cut") {
		t.Errorf("delivered stdout: got %q, want the head and the tail", out)
	}
	if !strings.HasSuffix(errOut, "èèèè\nERRTAIL\n") {
		t.Errorf("delivered stderr: got %q, want its tail", errOut)
	}
	// Each cut is told once, after the head, with an update whose output
	// comes after it: the minion's tail of that stream, and nothing of the
	// other.
	var cut int64
	cuts := 0
	for i, u := range updates {
		c := u.Form.Get("cut_bytes")
		if c == "" {
			continue
		}
		if cuts++; cuts == 1 && !strings.HasPrefix(joined(updates[:i], "stdout"), "HEAD\n") {
			t.Errorf("update %d tells a cut before the head was sent", i)
		}
		n, err := strconv.ParseInt(c, 10, 64)
		if err != nil || n <= 0 {
			t.Errorf("update %d: cut_bytes %q, want a positive count", i, c)
		}
		cut += n
		if so, se := u.Form.Get("stdout"), u.Form.Get("stderr"); so != "" && se != "" {
			t.Errorf("update %d tells a cut and carries both streams (%q, %q)", i, so, se)
		}
	}
	if cuts < 2 {
		t.Errorf("got %d updates telling a cut, want one for each stream", cuts)
	}
	// What was kept and what was cut add up to what was written.
	total := len("HEAD\n") + 20000*len("ééééééééééééééééééé\n") + len("TAIL\n") +
		len("ERRHEAD\n") + 20000*len("èèèèèèèèèèèèèèèèèèè\n") + len("ERRTAIL\n")
	if kept := int64(len(out) + len(errOut)); kept+cut != int64(total) {
		t.Errorf("kept %d and cut %d bytes: got %d in all, want %d", kept, cut, kept+cut, total)
	}
}

// TestTooLarge has the WEBAPP refuse updates over a size with 413: the
// minion sends less at a time until they pass, never gives up on the job,
// and every byte arrives once, in order.
func TestTooLarge(t *testing.T) {
	const maxBody = 200_000
	f := newFakeWebapp(t)
	lorry := writeLorry(t, `yes 'ééééééééééééééééééé' | head -n 30000; exit 3`)
	m, _ := newTestMinion(t, f, lorry)
	f.giveMeJob = oneJob(jobAnswer(2, "delta/big", "lorry", "{}", ""))
	refused := 0
	f.jobUpdate = func(n int, form url.Values) (int, string) {
		if len(form.Encode()) > maxBody {
			refused++
			return http.StatusRequestEntityTooLarge, `{"error": "request body too large"}`
		}
		return http.StatusOK, `{"kill": false}`
	}
	if ran, err := runOnce(t, t.Context(), m); !ran || err != nil {
		t.Fatalf("RunOnce: got %v, %v; want true, nil", ran, err)
	}
	if refused == 0 {
		t.Fatalf("no update was refused; the test sends too little")
	}
	updates := f.delivered()
	if got := updates[len(updates)-1].Form.Get("exit"); got != "3" {
		t.Errorf("exit: got %s, want 3", got)
	}
	if got, want := joined(updates, "stdout"), strings.Repeat("ééééééééééééééééééé\n", 30000); got != want {
		t.Errorf("delivered %d bytes, want the %d written", len(got), len(want))
	}
	for i, q := range updates {
		if !utf8.ValidString(q.Form.Get("stdout")) {
			t.Errorf("update %d splits a rune", i)
		}
	}
}
