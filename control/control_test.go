package control

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"lorrycontroller.dev/lc/clock"
	"lorrycontroller.dev/lc/confgit"
	"lorrycontroller.dev/lc/cron"
	"lorrycontroller.dev/lc/hosts/upstream"
	"lorrycontroller.dev/lc/statedb"
	"lorrycontroller.dev/lc/statedb/dbtest"
)

type stubConfig struct {
	cfg *confgit.Config
	err error
}

func TestMain(m *testing.M) { dbtest.Main(m, statedb.Migrate) }

func (s *stubConfig) Read(context.Context) (*confgit.Config, error) { return s.cfg, s.err }

// newApp makes an App over a new state database whose clock is at 1000,
// with a configuration of the lorries at paths applied.
func newApp(t *testing.T, paths ...string) (*App, *clock.Fake, *stubConfig) {
	t.Helper()
	fake := &clock.Fake{}
	fake.Set(1000)
	return newAppAt(t, dbtest.Place(t), fake, paths...)
}

// newAppAt is newApp over the database at place, on the clock fake.
func newAppAt(t *testing.T, place string, fake *clock.Fake, paths ...string) (*App, *clock.Fake, *stubConfig) {
	t.Helper()
	db, err := statedb.Open(context.Background(), place, statedb.Options{Clock: fake})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	var ls []confgit.Lorry
	for _, p := range paths {
		ls = append(ls, confgit.Lorry{Path: p, Text: `{"` + p + `":{"type":"git","url":"u"}}`, Type: "git",
			Interval: time.Hour, Timeout: time.Minute})
	}
	conf := &stubConfig{cfg: &confgit.Config{Commit: "c1", Lorries: ls}}
	a := &App{DB: db, Config: conf, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		GhostTimeout: time.Minute, JobMaxAge: time.Hour, FakeClock: fake}
	if _, err := a.ApplyConfiguration(context.Background()); err != nil {
		t.Fatal(err)
	}
	return a, fake, conf
}

func minion(name string) statedb.MinionID {
	return statedb.MinionID{Name: name, Host: "h", PID: 7}
}

// TestHandOutLeavesSweepsToTick checks that a hand-out claims and answers,
// nothing more: a claim never confirmed is ended by the next Tick past the
// claim timeout, not by the next hand-out, which then sees its result.
func TestHandOutLeavesSweepsToTick(t *testing.T) {
	ctx := context.Background()
	a, fake, _ := newApp(t, "a/one")
	h, err := a.HandOut(ctx, minion("m1"))
	if err != nil || h.Offer == nil || h.Offer.Job.Path != "a/one" {
		t.Fatalf("HandOut = %+v, %v; want a/one", h, err)
	}
	fake.Set(1000 + int64(DefaultClaimTimeout.Seconds()) + 1)
	if h, err := a.HandOut(ctx, minion("m2")); err != nil || h.Offer != nil {
		t.Fatalf("HandOut past the claim timeout, before a tick = %+v, %v; want nothing to do", h, err)
	}
	if _, err := a.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	h, err = a.HandOut(ctx, minion("m2"))
	if err != nil || h.Offer == nil || h.Offer.Job.Path != "a/one" || h.Offer.Job.ID != 2 {
		t.Fatalf("HandOut after the tick = %+v, %v; want job 2 of a/one", h, err)
	}
	err = a.DB.View(ctx, func(tx *statedb.Tx) error {
		j, err := tx.Job(ctx, 1)
		if err == nil && j.Status != statedb.StatusOrphaned {
			t.Errorf("job 1 is %s; want %s", j.Status, statedb.StatusOrphaned)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestHandOutTellsRetiredMinion checks that a retired minion is told to
// exit and given nothing.
func TestHandOutTellsRetiredMinion(t *testing.T) {
	ctx := context.Background()
	a, _, _ := newApp(t, "a/one")
	if err := a.RetireMinion(ctx, "m", true, false); err != nil {
		t.Fatal(err)
	}
	h, err := a.HandOut(ctx, minion("m"))
	if err != nil || !h.Retire || h.Offer != nil {
		t.Errorf("HandOut to a retired minion = %+v, %v; want Retire and no offer", h, err)
	}
}

// TestUpdateJobAnswersLeaseTerms checks that a job's update is answered
// with the lease terms, and the kill an admin asked for.
func TestUpdateJobAnswersLeaseTerms(t *testing.T) {
	ctx := context.Background()
	a, _, _ := newApp(t, "a/one")
	h, err := a.HandOut(ctx, minion("m"))
	if err != nil || h.Offer == nil {
		t.Fatalf("HandOut = %+v, %v", h, err)
	}
	if h.Offer.Lease != 30 || h.Offer.KillGrace != int64(DefaultKillGrace.Seconds()) {
		t.Errorf("offer's lease terms %+v; want half the ghost timeout and the default kill grace", h.Offer.LeaseTerms)
	}
	if err := a.StopJob(ctx, h.Offer.Job.ID); err != nil {
		t.Fatal(err)
	}
	res, err := a.UpdateJob(ctx, statedb.JobUpdate{ID: h.Offer.Job.ID, Minion: minion("m")})
	if err != nil || !res.Kill || res.Retire || res.LeaseTerms != h.Offer.LeaseTerms {
		t.Errorf("UpdateJob of a stopped job = %+v, %v; want Kill and the same lease terms", res, err)
	}
}

// TestConfigFailedIsRecorded checks that a configuration that cannot be
// read is answered with a ConfigFailed that keeps its cause, and recorded.
func TestConfigFailedIsRecorded(t *testing.T) {
	ctx := context.Background()
	a, _, conf := newApp(t, "a/one")
	conf.err = fmt.Errorf("lorries.conf: %w", confgit.ErrBadConf)
	_, err := a.ApplyConfiguration(ctx)
	var failed *ConfigFailed
	if !errors.As(err, &failed) || !errors.Is(err, confgit.ErrBadConf) {
		t.Fatalf("ApplyConfiguration of a broken configuration = %v; want a ConfigFailed of ErrBadConf", err)
	}
	err = a.DB.View(ctx, func(tx *statedb.Tx) error {
		st, err := tx.ConfigState(ctx)
		if err == nil && (st.Failure == "" || st.Commit != "c1") {
			t.Errorf("configuration state %+v; want the failure recorded beside the commit in use", st)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestRemoveOldJobsRefusesNegativeAge(t *testing.T) {
	a, _, _ := newApp(t)
	age := int64(-1)
	if _, _, err := a.RemoveOldJobs(context.Background(), &age); !errors.Is(err, statedb.ErrInvalid) {
		t.Errorf("RemoveOldJobs(-1) = %v; want ErrInvalid", err)
	}
}

func TestNewHostListerNeedsPrefixmap(t *testing.T) {
	list := NewHostLister(upstream.ListerOptions{})
	_, _, err := list(context.Background(), confgit.Host{Name: "gl.example", Type: "gitlab", Protocol: "https", Section: `{}`})
	if err == nil || !strings.Contains(err.Error(), "prefixmap") {
		t.Errorf("listing a host without a prefixmap = %v; want an error saying so", err)
	}
}

// TestPretendTimeTicks checks that moving the debug clock to a schedule's
// event makes its entry due at once, without waiting for the Scheduler,
// and that a hand-out alone fires nothing.
func TestPretendTimeTicks(t *testing.T) {
	ctx := context.Background()
	const t0 = 1700006400 // a midnight, UTC
	a, fake, conf := newApp(t)
	fake.Set(t0)
	text := `{"minute": 0, "hour": 3, "timezone": "UTC", "dst_fixes": ["skip", "repeat_use_only_early"],
		"max_shift_seconds_for_unskip_and_do_not_repeat": 3600}`
	it, err := cron.Parse([]byte(text), nil)
	if err != nil {
		t.Fatal(err)
	}
	conf.cfg = &confgit.Config{Commit: "c2", Lorries: []confgit.Lorry{{Path: "a/s", Text: `{"a/s":{"type":"git","url":"u"}}`,
		Type: "git", Interval: time.Hour, Timeout: time.Minute, Schedule: text, Cron: it}}}
	if _, err := a.ApplyConfiguration(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	fake.Set(t0 + 3*3600)
	if h, err := a.HandOut(ctx, minion("m")); err != nil || h.Offer != nil {
		t.Fatalf("HandOut at 03:00 before a tick = %+v, %v; want nothing: a hand-out ticks nothing", h, err)
	}
	if err := a.PretendTime(ctx, t0+3*3600+1); err != nil {
		t.Fatal(err)
	}
	if h, err := a.HandOut(ctx, minion("m")); err != nil || h.Offer == nil || h.Offer.Job.Path != "a/s" {
		t.Fatalf("HandOut after pretend-time to 03:00:01 = %+v, %v; want a/s", h, err)
	}
}

// TestSkippedSpecsHideCredentials checks that a skipped spec's error,
// as answered, logged and stored, shows no credential of its URLs,
// whatever characters the password holds.
func TestSkippedSpecsHideCredentials(t *testing.T) {
	ctx := context.Background()
	a, _, conf := newApp(t, "a/one")
	var log strings.Builder
	a.Log = slog.New(slog.NewTextHandler(&log, nil))
	for i, pass := range []string{"pw", `Se"cr t#/?<>'x`, "p@ss:w%rd"} {
		t.Run(pass, func(t *testing.T) {
			log.Reset()
			conf.cfg = &confgit.Config{Commit: fmt.Sprint("c", i+2), Lorries: conf.cfg.Lorries, Errors: []confgit.FileError{{
				File: "x.lorry", Error: `spec "x": cannot fetch https://u:` + pass + `@conf.example/x: refused`}}}
			res, err := a.ApplyConfiguration(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Errors) != 1 || strings.Contains(res.Errors[0].Error, pass) {
				t.Errorf("answered errors %+v; want one, without the password", res.Errors)
			}
			if strings.Contains(log.String(), pass) {
				t.Errorf("the log shows the password:\n%s", log.String())
			}
			err = a.DB.View(ctx, func(tx *statedb.Tx) error {
				st, err := tx.ConfigState(ctx)
				if err == nil && (len(st.Errors) != 1 || strings.Contains(st.Errors[0].Error, pass)) {
					t.Errorf("stored errors %+v; want one, without the password", st.Errors)
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestFinalReportRepeatedEndsOnce checks that a final report sent again,
// its first answer lost, is answered as the first was and is not taken
// for a second end: the job is logged as ended once.
func TestFinalReportRepeatedEndsOnce(t *testing.T) {
	ctx := context.Background()
	a, _, _ := newApp(t, "a/one")
	var log strings.Builder
	a.Log = slog.New(slog.NewTextHandler(&log, nil))
	h, err := a.HandOut(ctx, minion("m"))
	if err != nil || h.Offer == nil {
		t.Fatalf("HandOut = %+v, %v", h, err)
	}
	exit, zero := int64(0), int64(0)
	final := statedb.JobUpdate{ID: h.Offer.Job.ID, Minion: minion("m"), Exit: &exit, StdoutOffset: &zero, StderrOffset: &zero}
	for i, want := range []bool{false, true, true} {
		res, err := a.UpdateJob(ctx, final)
		if err != nil || res.Kill || res.Repeated != want {
			t.Errorf("final report %d = %+v, %v; want no kill, Repeated %v", i+1, res, err, want)
		}
	}
	if n := strings.Count(log.String(), `msg="job ended"`); n != 1 {
		t.Errorf("job logged as ended %d times; want once:\n%s", n, log.String())
	}
}
