package statedb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"lorrycontroller.dev/lc/clock"
	"lorrycontroller.dev/lc/statedb/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m, Migrate) }

// sqliteOnly marks a test of SQLite's files or pragmas: the PostgreSQL
// run of the suite passes it by.
func sqliteOnly(t *testing.T) {
	t.Helper()
	if dbtest.Postgres() {
		t.Skip("a test of SQLite's own storage")
	}
}

type fixture struct {
	db    *DB
	clock *clock.Fake
	path  string
}

func newFixture(t *testing.T, opts Options) *fixture {
	t.Helper()
	f := &fixture{clock: &clock.Fake{}, path: dbtest.Place(t)}
	f.clock.Set(1000)
	opts.Clock = f.clock
	db, err := Open(context.Background(), f.path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	f.db = db
	return f
}

func (f *fixture) update(t *testing.T, fn func(*Tx) error) {
	t.Helper()
	if err := f.db.Update(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

// view runs fn in a read transaction and fails the test on its error.
func (f *fixture) view(t *testing.T, fn func(*Tx) error) {
	t.Helper()
	if err := f.db.View(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) lorries(t *testing.T, paths ...string) {
	t.Helper()
	var want []NewLorry
	for _, p := range paths {
		want = append(want, NewLorry{Path: p, Text: `{"` + p + `":{"type":"git"}}`, Kind: "lorry", Interval: 100, Timeout: 50})
	}
	f.update(t, func(tx *Tx) error { _, err := tx.SetConfigLorries(context.Background(), want, Kept{}); return err })
}

func (f *fixture) give(t *testing.T, m MinionID) (Assignment, error) {
	t.Helper()
	var a Assignment
	err := f.db.Update(context.Background(), func(tx *Tx) error {
		var err error
		a, err = tx.GiveMeJob(context.Background(), m)
		return err
	})
	return a, err
}

func (f *fixture) mustGive(t *testing.T, m MinionID) Assignment {
	t.Helper()
	a, err := f.give(t, m)
	if err != nil {
		t.Fatalf("GiveMeJob(%v): %v", m, err)
	}
	if a.Idle != "" {
		t.Fatalf("GiveMeJob(%v): no job (%s); want one", m, a.Idle)
	}
	return a
}

// idle asks for a job on behalf of m and fails unless there is none.
func (f *fixture) idle(t *testing.T, m MinionID, why string) {
	t.Helper()
	a, err := f.give(t, m)
	if err != nil {
		t.Fatalf("GiveMeJob(%v): %v", m, err)
	}
	if a.Idle == "" {
		t.Errorf("%s: got job %d for %s; want none", why, a.Job.ID, a.Lorry.Path)
	}
}

func (f *fixture) report(t *testing.T, u JobUpdate) (bool, error) {
	t.Helper()
	var kill bool
	err := f.db.Update(context.Background(), func(tx *Tx) error {
		var err error
		var r UpdateReply
		r, err = tx.UpdateJob(context.Background(), u)
		kill = r.Kill
		return err
	})
	return kill, err
}

func (f *fixture) job(t *testing.T, id int64) Job {
	t.Helper()
	var j Job
	err := f.db.View(context.Background(), func(tx *Tx) error {
		var err error
		j, err = tx.Job(context.Background(), id)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func (f *fixture) lorry(t *testing.T, path string) Lorry {
	t.Helper()
	var l Lorry
	err := f.db.View(context.Background(), func(tx *Tx) error {
		var err error
		l, err = tx.Lorry(context.Background(), path)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func (f *fixture) queue(t *testing.T) []string {
	t.Helper()
	var q []string
	err := f.db.View(context.Background(), func(tx *Tx) error {
		var err error
		q, err = tx.QueuePaths(context.Background())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func exit(n int64) *int64 { return &n }

var m1 = MinionID{Name: "m1", Host: "h", PID: 1}

func TestOpenMigratesOnceAndReopens(t *testing.T) {
	f := newFixture(t, Options{})
	v, err := f.db.SchemaVersion(context.Background())
	if err != nil || v < 1 {
		t.Fatalf("SchemaVersion = %d, %v; want >= 1", v, err)
	}
	f.update(t, func(tx *Tx) error { return tx.SetRunningQueue(context.Background(), false) })
	f.db.Close()
	db, err := Open(context.Background(), f.path, Options{Clock: f.clock})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer db.Close()
	db.View(context.Background(), func(tx *Tx) error {
		running, err := tx.RunningQueue(context.Background())
		if err != nil || running {
			t.Errorf("RunningQueue after reopen = %v, %v; want false", running, err)
		}
		return nil
	})
}

func TestSettings(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	f.update(t, func(tx *Tx) error {
		if r, _ := tx.RunningQueue(ctx); !r {
			t.Error("new database: queue stopped; want running")
		}
		if m, _ := tx.MaxJobs(ctx); m != nil {
			t.Errorf("new database: max_jobs = %d; want unlimited", *m)
		}
		if err := tx.SetMaxJobs(ctx, exit(3)); err != nil {
			return err
		}
		if m, _ := tx.MaxJobs(ctx); m == nil || *m != 3 {
			t.Errorf("max_jobs = %v; want 3", m)
		}
		if err := tx.SetMaxJobs(ctx, exit(-1)); !errors.Is(err, ErrInvalid) {
			t.Errorf("SetMaxJobs(-1) = %v; want ErrInvalid", err)
		}
		if err := tx.SetMaxJobs(ctx, nil); err != nil {
			return err
		}
		if m, _ := tx.MaxJobs(ctx); m != nil {
			t.Errorf("max_jobs = %d; want unlimited", *m)
		}
		return nil
	})
}

func TestSetConfigLorries(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	f.lorries(t, "a", "b", "c")
	a := f.mustGive(t, m1) // "a" runs, moves to the bottom
	var ch LorryChanges
	f.update(t, func(tx *Tx) error {
		var err error
		ch, err = tx.SetConfigLorries(ctx, []NewLorry{
			{Path: "b", Text: "changed", Kind: "lorry", Interval: 5, Timeout: 50},
			{Path: "c", Text: `{"c":{"type":"git"}}`, Kind: "lorry", Interval: 100, Timeout: 50},
			{Path: "d", Text: "new", Kind: "lorry", Interval: 100, Timeout: 50},
		}, Kept{})
		return err
	})
	want := LorryChanges{Added: 1, Changed: 1, Removed: 1, Unchanged: 1}
	if ch != want {
		t.Errorf("changes = %+v; want %+v", ch, want)
	}
	if got, want := strings.Join(f.queue(t), " "), "b c d"; got != want {
		t.Errorf("queue = %q; want %q", got, want)
	}
	if l := f.lorry(t, "b"); l.Text != "changed" || l.Interval != 5 {
		t.Errorf("b = %+v; want changed text and interval 5", l)
	}
	// The removed lorry's job runs on and can still finish.
	if _, err := f.report(t, JobUpdate{ID: a.Job.ID, Minion: m1, Exit: exit(0)}); err != nil {
		t.Errorf("finishing job of removed lorry: %v", err)
	}
	// Re-adding a path whose old job still runs must not allow a second job.
	f.lorries(t, "x")
	x := f.mustGive(t, m1)
	f.lorries(t, "y")
	f.lorries(t, "x")
	if l := f.lorry(t, "x"); l.RunningJob == nil || *l.RunningJob != x.Job.ID {
		t.Errorf("re-added x running_job = %v; want %d", l.RunningJob, x.Job.ID)
	}
}

func TestSetConfigLorriesKeepsBrokenDefinitions(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	lorry := func(path, file string) NewLorry {
		return NewLorry{Path: path, Text: path, Kind: "lorry", FromPath: file, Interval: 1, Timeout: 1}
	}
	f.update(t, func(tx *Tx) error {
		_, err := tx.SetConfigLorries(ctx, []NewLorry{lorry("a/1", "a.lorry"), lorry("a/2", "a.lorry"),
			lorry("b/1", "b.lorry"), lorry("c/1", "c.lorry")}, Kept{})
		return err
	})
	var ch LorryChanges
	f.update(t, func(tx *Tx) error {
		var err error
		ch, err = tx.SetConfigLorries(ctx, nil, Kept{FromPaths: []string{"a.lorry"}, Paths: []string{"b/1"}})
		return err
	})
	if got, want := strings.Join(f.queue(t), " "), "a/1 a/2 b/1"; got != want {
		t.Errorf("queue = %q; want %q (c/1 removed, the others kept)", got, want)
	}
	if ch.Removed != 1 {
		t.Errorf("removed %d; want 1", ch.Removed)
	}
}

// The head a successful job reports is kept on its lorry until another
// successful job reports one, or the lorry's definition changes; a failed
// job's is ignored.
func TestUpstreamHead(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	f.lorries(t, "a")
	run := func(exitCode int64, head string) {
		t.Helper()
		f.clock.Set(f.clock.Now().Unix() + 1000)
		a := f.mustGive(t, m1)
		if _, err := f.report(t, JobUpdate{ID: a.Job.ID, Minion: m1, Exit: exit(exitCode), Head: head}); err != nil {
			t.Fatal(err)
		}
	}
	for _, step := range []struct {
		name string
		exit int64
		head string
		want string
	}{
		{name: "success", exit: 0, head: "trunk", want: "trunk"},
		{name: "failure", exit: 1, head: "side", want: "trunk"},
		{name: "success without a head", exit: 0, want: "trunk"},
		{name: "success with another head", exit: 0, head: "main", want: "main"},
	} {
		run(step.exit, step.head)
		if got := f.lorry(t, "a").UpstreamHead; got != step.want {
			t.Errorf("after %s: upstream head = %q; want %q", step.name, got, step.want)
		}
	}
	f.update(t, func(tx *Tx) error {
		_, err := tx.SetConfigLorries(ctx, []NewLorry{{Path: "a", Text: `{"a":{"type":"git","url":"elsewhere"}}`, Kind: "lorry", Interval: 100}}, Kept{})
		return err
	})
	if got := f.lorry(t, "a").UpstreamHead; got != "" {
		t.Errorf("after the lorry changed: upstream head = %q; want none", got)
	}
}

func TestRemoveOldJobsKeepsNewestPerLorry(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	f.lorries(t, "a", "b")
	var ids []int64
	for i := range 3 {
		f.clock.Set(int64(1000 + i*1000))
		for range 2 {
			a := f.mustGive(t, m1)
			f.report(t, JobUpdate{ID: a.Job.ID, Minion: m1, Exit: exit(0)})
			ids = append(ids, a.Job.ID)
		}
	}
	f.clock.Set(10000)
	var n int64
	f.update(t, func(tx *Tx) error {
		var err error
		n, err = tx.RemoveOldJobs(ctx, 100)
		return err
	})
	if n != 4 {
		t.Errorf("removed %d; want 4", n)
	}
	f.db.View(ctx, func(tx *Tx) error {
		left, _ := tx.JobIDs(ctx)
		if fmt.Sprint(left) != fmt.Sprint(ids[4:]) {
			t.Errorf("jobs left = %v; want %v", left, ids[4:])
		}
		return nil
	})
}

func TestOutputCapKeepsHeadAndTail(t *testing.T) {
	f := newFixture(t, Options{OutputLimit: 100})
	ctx := context.Background()
	f.lorries(t, "a")
	a := f.mustGive(t, m1)
	var all strings.Builder
	for i := range 40 {
		line := fmt.Sprintf("line %02d\n", i) // 8 bytes
		all.WriteString(line)
		if _, err := f.report(t, JobUpdate{ID: a.Job.ID, Minion: m1, Stdout: []byte(line)}); err != nil {
			t.Fatal(err)
		}
	}
	big := strings.Repeat("x", 30)
	f.report(t, JobUpdate{ID: a.Job.ID, Minion: m1, Stdout: []byte(big)})
	j := f.job(t, a.Job.ID)
	if j.OutputBytes != int64(all.Len()+30) {
		t.Errorf("output_bytes = %d; want %d", j.OutputBytes, all.Len()+30)
	}
	f.db.View(ctx, func(tx *Tx) error {
		out, err := tx.Output(ctx, a.Job.ID)
		if err != nil {
			t.Fatal(err)
		}
		head := all.String()[:50]
		if !strings.HasPrefix(out, head) {
			t.Errorf("output %q does not start with the head %q", out, head)
		}
		if !strings.HasSuffix(out, "line 39\n"+big) {
			t.Errorf("output %q does not end with the tail", out)
		}
		marker := fmt.Sprintf("[... %d bytes of output cut ...]", j.CutBytes)
		if j.CutBytes == 0 || !strings.Contains(out, marker) {
			t.Errorf("output %q lacks the cut marker %q", out, marker)
		}
		if kept := int64(len(out)) - int64(len(marker)) - 2; kept+j.CutBytes != j.OutputBytes || kept > 100 {
			t.Errorf("kept %d + cut %d != received %d, or over the cap", kept, j.CutBytes, j.OutputBytes)
		}
		return nil
	})
}

// Many minions racing for jobs must never get two running jobs for one
// lorry, and must each get a different lorry while there are enough.
func TestConcurrentGiveMeJob(t *testing.T) {
	f := newFixture(t, Options{})
	var paths []string
	for i := range 20 {
		paths = append(paths, fmt.Sprintf("p/%02d", i))
	}
	f.lorries(t, paths...)
	var mu sync.Mutex
	got := map[string]int{}
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, err := f.give(t, MinionID{Name: fmt.Sprint("m", i), Host: "h", PID: 1})
			if err != nil {
				t.Error(err)
				return
			}
			if a.Idle != "" {
				return
			}
			mu.Lock()
			got[a.Lorry.Path]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(got) != 20 {
		t.Errorf("%d lorries handed out; want 20", len(got))
	}
	for p, n := range got {
		if n != 1 {
			t.Errorf("lorry %s handed out %d times", p, n)
		}
	}
}

func TestSetHostLorries(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	gen := func(path, text string) NewLorry {
		return NewLorry{Path: path, Text: text, Kind: "lorry", FromPath: "up/" + path, Interval: 10, Timeout: 5,
			Description: "about " + path, DefaultBranch: "main"}
	}
	f.lorries(t, "conf/x")
	f.update(t, func(tx *Tx) error {
		_, err := tx.SetConfigHosts(ctx, []Host{{Name: "h1", Type: "gitlab", Protocol: "https", Section: "{}"},
			{Name: "h2", Type: "gitea", Protocol: "https", Section: "{}"}})
		return err
	})
	var ch LorryChanges
	var clashes []string
	apply := func(host string, want ...NewLorry) {
		t.Helper()
		f.update(t, func(tx *Tx) error {
			var err error
			ch, clashes, err = tx.SetHostLorries(ctx, host, want)
			return err
		})
	}
	apply("h1", gen("m/a", "a"), gen("m/b", "b"), gen("conf/x", "x"))
	if want := (LorryChanges{Added: 2}); ch != want || strings.Join(clashes, " ") != "conf/x" {
		t.Errorf("first listing: %+v, clashes %v; want %+v and conf/x clashing", ch, clashes, want)
	}
	if l := f.lorry(t, "m/a"); !l.Generated || l.FromHost != "h1" || l.FromPath != "up/m/a" || l.Description != "about m/a" || l.DefaultBranch != "main" {
		t.Errorf("generated lorry = %+v", l)
	}
	if l := f.lorry(t, "conf/x"); l.Generated {
		t.Error("a host took over a lorry of the configuration")
	}
	apply("h2", gen("m/a", "other"))
	if len(clashes) != 1 || ch.Added != 0 {
		t.Errorf("another host's path: %+v, clashes %v; want a clash", ch, clashes)
	}
	apply("h1", gen("m/a", "a2"), gen("m/c", "c"))
	if want := (LorryChanges{Added: 1, Changed: 1, Removed: 1}); ch != want {
		t.Errorf("second listing: %+v; want %+v", ch, want)
	}
	if got, want := strings.Join(f.queue(t), " "), "conf/x m/a m/c"; got != want {
		t.Errorf("queue = %q; want %q", got, want)
	}
	// A failed listing is recorded and leaves the lorries alone.
	f.update(t, func(tx *Tx) error {
		if err := tx.RecordListing(ctx, "h1", HostListing{Repos: 2}); err != nil {
			return err
		}
		f.clock.Set(2000)
		return tx.RecordListing(ctx, "h1", HostListing{Error: "401 Unauthorized"})
	})
	f.db.View(ctx, func(tx *Tx) error {
		h, err := tx.Host(ctx, "h1")
		if err != nil || h.Repos != 2 || h.LastLsError != "401 Unauthorized" || h.LastLs == nil {
			t.Errorf("host after a failed listing = %+v, %v; want 2 repos kept and the error", h, err)
		}
		return nil
	})
	f.update(t, func(tx *Tx) error {
		if err := tx.RecordListing(ctx, "nope", HostListing{}); !errors.Is(err, ErrNotFound) {
			t.Errorf("RecordListing(nope) = %v; want ErrNotFound", err)
		}
		return nil
	})
	if got := strings.Join(f.queue(t), " "); got != "conf/x m/a m/c" {
		t.Errorf("queue after a failed listing = %q", got)
	}
	// A changed section reaches the lorries at once, and has the host
	// listed again.
	f.update(t, func(tx *Tx) error {
		_, err := tx.SetConfigHosts(ctx, []Host{{Name: "h1", Type: "gitlab", Protocol: "https", Interval: 77, Timeout: 7, Section: `{"changed":1}`},
			{Name: "h2", Type: "gitea", Protocol: "https", Section: "{}"}})
		return err
	})
	if l := f.lorry(t, "m/a"); l.Interval != 77 || l.Timeout != 7 {
		t.Errorf("lorry after its host section changed = interval %d, timeout %d; want 77, 7", l.Interval, l.Timeout)
	}
	f.db.View(ctx, func(tx *Tx) error {
		h1, _ := tx.Host(ctx, "h1")
		h2, _ := tx.Host(ctx, "h2")
		if !h1.Relist || h2.Relist {
			t.Errorf("relist = %v, %v; want the changed host only", h1.Relist, h2.Relist)
		}
		return nil
	})
	f.update(t, func(tx *Tx) error { return tx.RecordListing(ctx, "h1", HostListing{Repos: 2}) })
	f.db.View(ctx, func(tx *Tx) error {
		if h1, _ := tx.Host(ctx, "h1"); h1.Relist {
			t.Error("relist still set after a listing")
		}
		return nil
	})

	// A host removed from the configuration takes its lorries with it.
	f.update(t, func(tx *Tx) error { _, err := tx.SetConfigHosts(ctx, nil); return err })
	if got := strings.Join(f.queue(t), " "); got != "conf/x" {
		t.Errorf("queue after the host went = %q; want conf/x", got)
	}
}

// keptOnly is output that can be read only where appending may keep it,
// as a spool holds it.
type keptOnly struct {
	data       []byte
	head, tail int64
}

func (k keptOnly) Len() int64 { return int64(len(k.data)) }
func (k keptOnly) ReadAt(p []byte, off int64) (int, error) {
	end := off + int64(len(p))
	if end > k.head && off < int64(len(k.data))-k.tail {
		return 0, fmt.Errorf("read [%d, %d) of %d: not kept", off, end, len(k.data))
	}
	return copy(p, k.data[off:]), nil
}

func TestSpooledOutputStoredAsIfInMemory(t *testing.T) {
	ctx := context.Background()
	const limit = 3*outputPiece + 1000
	var want string
	for _, spooled := range []bool{false, true} {
		f := newFixture(t, Options{OutputLimit: limit})
		f.lorries(t, "a")
		a := f.mustGive(t, m1)
		head, tail := f.db.OutputCaps()
		for i, n := range []int{100, 5 * outputPiece, 7, 2*outputPiece + 3} {
			data := bytes.Repeat([]byte{byte('a' + i)}, n)
			copy(data, fmt.Sprintf("<%d>", i))
			copy(data[n-3:], fmt.Sprintf("</%d", i))
			u := JobUpdate{ID: a.Job.ID, Minion: m1, Stdout: data}
			if spooled {
				u = JobUpdate{ID: a.Job.ID, Minion: m1, StdoutSpool: keptOnly{data, head, tail}}
			}
			if _, err := f.report(t, u); err != nil {
				t.Fatalf("spooled %v: update %d: %v", spooled, i, err)
			}
		}
		var out string
		f.db.View(ctx, func(tx *Tx) error {
			var err error
			out, err = tx.Output(ctx, a.Job.ID)
			return err
		})
		j := f.job(t, a.Job.ID)
		if kept := int64(len(out)) - int64(len(fmt.Sprintf("\n[... %d bytes of output cut ...]\n", j.CutBytes))); kept > limit {
			t.Errorf("spooled %v: %d bytes kept; want at most %d", spooled, kept, limit)
		}
		if !spooled {
			want = out
		} else if out != want {
			t.Errorf("spooled output (%d bytes) differs from the same output in memory (%d bytes)", len(out), len(want))
		}
	}
}

func TestConfigLorriesInBatches(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	f.lorries(t, "a", "b", "c")
	lorry := func(p string) NewLorry {
		return NewLorry{Path: p, Text: `{"` + p + `":{"type":"git"}}`, Kind: "lorry", Interval: 100, Timeout: 50}
	}
	f.update(t, func(tx *Tx) error { return tx.BeginConfigLorries(ctx) })
	var ch LorryChanges
	for _, batch := range [][]NewLorry{{lorry("b"), lorry("d")}, {lorry("e")}} {
		f.update(t, func(tx *Tx) error {
			c, err := tx.AddConfigLorries(ctx, batch)
			ch.Added, ch.Unchanged = ch.Added+c.Added, ch.Unchanged+c.Unchanged
			return err
		})
		// Nothing is removed while batches are added.
		if got, want := strings.Join(f.queue(t), " "), "a b c d e"; !strings.HasPrefix(want, got) || !strings.HasPrefix(got, "a b c") {
			t.Errorf("queue between batches = %q; want a, b and c, and what was added", got)
		}
	}
	if want := (LorryChanges{Added: 2, Unchanged: 1}); ch != want {
		t.Errorf("changes = %+v; want %+v", ch, want)
	}
	err := f.db.Update(ctx, func(tx *Tx) error { _, err := tx.AddConfigLorries(ctx, []NewLorry{lorry("d")}); return err })
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("adding d in a second batch: %v; want ErrInvalid", err)
	}
	var removed []int
	for after, done := "", false; !done; {
		f.update(t, func(tx *Tx) error {
			n, last, err := tx.RemoveUnseenLorries(ctx, after, 1)
			removed, after, done = append(removed, n), last, last == ""
			return err
		})
	}
	if got, want := fmt.Sprint(removed), "[1 1 0]"; got != want {
		t.Errorf("removed %s in batches of 1; want %s", got, want)
	}
	f.update(t, func(tx *Tx) error { return tx.EndConfigLorries(ctx) })
	if got, want := strings.Join(f.queue(t), " "), "b d e"; got != want {
		t.Errorf("queue = %q; want %q", got, want)
	}
}
