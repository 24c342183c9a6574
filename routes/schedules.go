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

// tickSchedules advances the stateful cron of every scheduled entry, within
// tx: an entry whose schedule fires becomes due. It runs before every
// hand-out and from the Scheduler, so that firing never waits for a timer
// and a WEBAPP back from an outage catches up once, skipping what is older
// than each schedule allows (cron.Item.Advance).
func (s *Server) tickSchedules(ctx context.Context, tx *statedb.Tx) error {
	list, err := tx.ScheduledLorries(ctx)
	if err != nil {
		return err
	}
	now := s.clocks(tx.Now)
	for _, e := range list {
		it, err := cronItem(e.Schedule)
		if err != nil {
			s.Log.Error("unreadable schedule", "path", e.Path, "err", err)
			continue
		}
		prev := cron.State{Wall: e.State.Wall, Mono: e.State.Mono, Boot: e.State.Boot, Handled: e.State.Handled}
		fire, next, rep := it.Advance(prev, now)
		due, _ := it.NextDue(next)
		switch {
		case rep.Notable():
			s.Log.Warn("schedule caught up", "path", e.Path, "fired", fire, "report", rep)
		case fire:
			s.Log.Info("schedule fired", "path", e.Path, "running", e.Running, "report", rep)
		}
		st := statedb.CronState{Wall: next.Wall, Mono: next.Mono, Boot: next.Boot, Handled: next.Handled}
		if err := tx.TickSchedule(ctx, e.Path, e.Schedule, st, fire, due); err != nil {
			return err
		}
	}
	return nil
}

// keepHouse ticks the schedules and ends the unconfirmed claims within tx,
// at most once in each second of tx.Now: both depend only on the time in
// whole seconds and on what the configuration says, so that doing them
// again for the other minions asking in the same second would change
// nothing, and cost each hand-out two queries. Reading a configuration
// forgets the second, and so does a failed hand-out, whose transaction
// undid the work.
func (s *Server) keepHouse(ctx context.Context, tx *statedb.Tx) error {
	if s.houseKept.Load() == tx.Now {
		return nil
	}
	if err := s.tickSchedules(ctx, tx); err != nil {
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

func (sc *Scheduler) runOnce(ctx context.Context) error {
	s := sc.Server
	return s.DB.Update(ctx, func(tx *statedb.Tx) error {
		if err := s.tickSchedules(ctx, tx); err != nil {
			return err
		}
		if err := s.orphanClaimedJobs(ctx, tx); err != nil {
			return err
		}
		// The status page's chart of queue waits needs a sample a minute.
		_, err := tx.SampleQueues(ctx)
		return err
	})
}
