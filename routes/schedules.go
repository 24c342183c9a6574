package routes

import (
	"context"
	"sync"
	"time"

	"lorrycontroller/clock"
	"lorrycontroller/cron"
	"lorrycontroller/statedb"
)

// schedules keeps the items of the schedules in use, parsed once per
// distinct text: every tick looks at every scheduled entry.
var schedules sync.Map // text -> *cron.Item, or error

// cronItem parses the schedule text as stored. The zone of an item
// without "timezone" is the WEBAPP's local one, as when it was read.
func cronItem(text string) (*cron.Item, error) {
	if v, ok := schedules.Load(text); ok {
		if err, bad := v.(error); bad {
			return nil, err
		}
		return v.(*cron.Item), nil
	}
	it, err := cron.Parse([]byte(text), nil)
	if err != nil {
		schedules.Store(text, err)
		return nil, err
	}
	schedules.Store(text, it)
	return it, nil
}

// describeSchedule is the schedule text in words, for the lorry's JSON
// and page; nil for none.
func describeSchedule(text string) *string {
	if text == "" {
		return nil
	}
	it, err := cronItem(text)
	if err != nil {
		s := "unreadable schedule: " + err.Error()
		return &s
	}
	s := it.Describe()
	return &s
}

// clocks reads the clocks for a tick at the transaction's time. Under the
// fake clock the monotonic clock means nothing, and is left out.
func (s *Server) clocks(now int64) cron.Reading {
	if s.FakeClock != nil {
		return cron.Reading{Wall: now}
	}
	r := cron.ReadClocks(clock.System{})
	r.Wall = now
	return r
}

// tickBatch bounds the entries one tick advances in one transaction, so
// that however many schedules fire at once, the minions' writes get the
// write session between batches.
const tickBatch = 256

// handOutTickBatch bounds the entries a hand-out advances before it looks
// for work (keepHouse), so that a burst of events never makes one
// give-me-job slow: the Scheduler, and the next seconds' hand-outs, deal
// with the rest, and an entry handed out is advanced on its own first
// (tickHandedOut).
const handOutTickBatch = 64

// tickWork counts what ticks did: the entries looked at, those written,
// the steps of the cron searches, and the transactions that looked at
// some and the most one looked at. Tests check it stays bounded.
type tickWork struct {
	entries, written, steps int
	batches, largest        int
}

func (w *tickWork) add(o tickWork) {
	w.entries += o.entries
	w.written += o.written
	w.steps += o.steps
	w.batches += o.batches
	w.largest = max(w.largest, o.largest)
}

// batch adds the work of one transaction.
func (w *tickWork) batch(o tickWork) {
	if o.entries > 0 {
		o.batches, o.largest = 1, o.entries
	}
	w.add(o)
}

// tickDue advances, within tx, the stateful cron of up to limit entries
// whose next event has come: those that fire become due. An entry whose
// next event is still to come is not looked at, as a tick would change
// nothing that matters for it: its next event stays the same, and Advance
// deals with everything from its state's Handled when the event comes.
// more says that limit entries were advanced and others may be waiting.
func (s *Server) tickDue(ctx context.Context, tx *statedb.Tx, limit int) (w tickWork, more bool, err error) {
	list, err := tx.DueSchedules(ctx, limit)
	if err != nil || len(list) == 0 {
		return w, false, err
	}
	now := s.clocks(tx.Now)
	for _, e := range list {
		one, err := s.tickEntry(ctx, tx, e, now)
		if err != nil {
			return w, false, err
		}
		w.add(one)
	}
	return w, len(list) == limit, nil
}

// tickAhead advances, within tx, up to limit entries after path after
// whose events are dealt with beyond now: after the wall clock was set
// back, one set back by more than its schedule allows forgets the past,
// and its events fire again as they come (cron.Item.Advance). It returns
// the path of the last entry looked at, "" when there were none.
func (s *Server) tickAhead(ctx context.Context, tx *statedb.Tx, after string, limit int) (w tickWork, last string, err error) {
	list, err := tx.AheadSchedules(ctx, after, limit)
	if err != nil || len(list) == 0 {
		return w, "", err
	}
	now := s.clocks(tx.Now)
	for _, e := range list {
		one, err := s.tickEntry(ctx, tx, e, now)
		if err != nil {
			return w, "", err
		}
		w.add(one)
		last = e.Path
	}
	return w, last, nil
}

// tickHandedOut advances, within tx, the entry at path that a hand-out
// just gave a job, if its next event has come and no tick has dealt with
// it yet: the event fires into the job now running, and the job's end
// makes the entry due at the event after, not at this one again.
func (s *Server) tickHandedOut(ctx context.Context, tx *statedb.Tx, path string) error {
	e, ok, err := tx.DueSchedule(ctx, path)
	if err != nil || !ok {
		return err
	}
	_, err = s.tickEntry(ctx, tx, e, s.clocks(tx.Now))
	return err
}

// tickEntry advances the stateful cron of one entry at now and records
// it. An entry whose state the tick leaves as it was (the clock is behind
// it by less than its schedule allows) is not written.
func (s *Server) tickEntry(ctx context.Context, tx *statedb.Tx, e statedb.Scheduled, now cron.Reading) (tickWork, error) {
	w := tickWork{entries: 1}
	prev := cron.State{Wall: e.State.Wall, Mono: e.State.Mono, Boot: e.State.Boot, Handled: e.State.Handled}
	it, err := cronItem(e.Schedule)
	if err != nil {
		// Read once, it is never due by its schedule, and no tick looks
		// at it again until the configuration changes it.
		s.Log.Error("unreadable schedule", "path", e.Path, "err", err)
		w.written++
		return w, tx.TickSchedule(ctx, e.Path, e.Schedule, e.State, false, statedb.NoEvent)
	}
	fire, next, rep := it.Advance(prev, now)
	due, ok, steps := it.NextDueFrom(prev, e.Next, e.Next != statedb.NoEvent, next)
	if !ok {
		due = statedb.NoEvent
	}
	w.steps = rep.Steps + steps
	switch {
	case rep.Notable():
		s.Log.Warn("schedule caught up", "path", e.Path, "fired", fire, "report", rep)
	case fire:
		s.Log.Info("schedule fired", "path", e.Path, "running", e.Running, "report", rep)
	}
	if !fire && next.Handled == prev.Handled && due == e.Next {
		return w, nil
	}
	w.written++
	st := statedb.CronState{Wall: next.Wall, Mono: next.Mono, Boot: next.Boot, Handled: next.Handled}
	return w, tx.TickSchedule(ctx, e.Path, e.Schedule, st, fire, due)
}

// keepHouse ticks the schedules whose events have come and ends the
// unconfirmed claims within tx, at most once in each second of tx.Now:
// both depend only on the time in whole seconds and on what the
// configuration says, so that doing them again for the other minions
// asking in the same second would change nothing. Between events the tick
// is one probe of an index that finds nothing, whatever the number of
// schedules; when many fire at once, a hand-out advances a bounded few and
// leaves the rest to the Scheduler. Reading a configuration forgets the
// second, and so does a failed hand-out, whose transaction undid the work.
func (s *Server) keepHouse(ctx context.Context, tx *statedb.Tx) error {
	if s.houseKept.Load() == tx.Now {
		return nil
	}
	if _, _, err := s.tickDue(ctx, tx, handOutTickBatch); err != nil {
		return err
	}
	if err := s.orphanClaimedJobs(ctx, tx); err != nil {
		return err
	}
	s.houseKept.Store(tx.Now)
	return nil
}

// DefaultSchedulerInterval is how often the Scheduler ticks. Every
// schedule allows a minute's delay at least, and minions asking for work
// tick too.
const DefaultSchedulerInterval = 5 * time.Second

// Scheduler is the WEBAPP's own loop that ticks the schedules and ends
// unconfirmed claims, so that the lorry pages show what is due even when
// no minion asks for work. It also samples the queues, at most once a
// minute, for the status page's chart of their waits.
type Scheduler struct {
	Server *Server
	Every  time.Duration

	// lastWall is tx.Now at the last run; 0 before the first. A run that
	// finds the wall clock behind it (set back, or set back while the
	// WEBAPP was stopped) looks at the entries ahead of the clock too.
	lastWall int64
	// work is what the last run's ticks did, for tests.
	work tickWork
}

// Run ticks every s.Every until ctx ends.
func (sc *Scheduler) Run(ctx context.Context) {
	every := sc.Every
	if every <= 0 {
		every = DefaultSchedulerInterval
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if err := sc.runOnce(ctx); err != nil && ctx.Err() == nil {
			sc.Server.Log.Warn("scheduler tick failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// runOnce ticks every entry whose next event has come, in transactions of
// tickBatch entries, and, when the wall clock went back since the last
// run (or at the first), every entry ahead of the clock. Then it ends the
// unconfirmed claims and samples the queues.
func (sc *Scheduler) runOnce(ctx context.Context) error {
	s := sc.Server
	sc.work = tickWork{}
	var now int64
	for more := true; more; {
		err := s.DB.Update(ctx, func(tx *statedb.Tx) error {
			var w tickWork
			var err error
			w, more, err = s.tickDue(ctx, tx, tickBatch)
			sc.work.batch(w)
			// Every entry written leaves the range; one that did not
			// would be found again.
			more = more && w.written > 0
			now = tx.Now
			return err
		})
		if err != nil {
			return err
		}
	}
	if sc.lastWall == 0 || now < sc.lastWall {
		for after, done := "", false; !done; {
			err := s.DB.Update(ctx, func(tx *statedb.Tx) error {
				w, last, err := s.tickAhead(ctx, tx, after, tickBatch)
				sc.work.batch(w)
				after, done = last, last == "" || w.entries < tickBatch
				return err
			})
			if err != nil {
				return err
			}
		}
	}
	sc.lastWall = now
	return s.DB.Update(ctx, func(tx *statedb.Tx) error {
		if err := s.orphanClaimedJobs(ctx, tx); err != nil {
			return err
		}
		// The status page's chart of queue waits needs a sample a minute.
		_, err := tx.SampleQueues(ctx)
		return err
	})
}
