package control

import (
	"context"
	"fmt"
	"sync"
	"time"

	"lorrycontroller.dev/lc/clock"
	"lorrycontroller.dev/lc/cron"
	"lorrycontroller.dev/lc/statedb"
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

// DescribeSchedule is the schedule text in words, for the lorry's JSON
// and page; nil for none.
func DescribeSchedule(text string) *string {
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
func (a *App) clocks(now int64) cron.Reading {
	if a.FakeClock != nil {
		return cron.Reading{Wall: now}
	}
	r := cron.ReadClocks(clock.System{})
	r.Wall = now
	return r
}

// TickBatch bounds the entries one tick advances in one transaction, so
// that however many schedules fire at once, the minions' writes get the
// write session between batches.
const TickBatch = 256

// TickWork counts what ticks did: the entries looked at, those written,
// the steps of the cron searches, and the transactions that looked at
// some and the most one looked at. Tests check it stays bounded.
type TickWork struct {
	Entries, Written, Steps int
	Batches, Largest        int
}

// Add adds o to w.
func (w *TickWork) Add(o TickWork) {
	w.Entries += o.Entries
	w.Written += o.Written
	w.Steps += o.Steps
	w.Batches += o.Batches
	w.Largest = max(w.Largest, o.Largest)
}

// batch adds the work of one transaction.
func (w *TickWork) batch(o TickWork) {
	if o.Entries > 0 {
		o.Batches, o.Largest = 1, o.Entries
	}
	w.Add(o)
}

// tickDue advances, within tx, the stateful cron of up to limit entries
// whose next event has come: those that fire become due. An entry whose
// next event is still to come is not looked at, as a tick would change
// nothing that matters for it: its next event stays the same, and Advance
// deals with everything from its state's Handled when the event comes.
// more says that limit entries were advanced and others may be waiting.
func (a *App) tickDue(ctx context.Context, tx *statedb.Tx, limit int) (w TickWork, more bool, err error) {
	list, err := tx.DueSchedules(ctx, limit)
	if err != nil || len(list) == 0 {
		return w, false, err
	}
	now := a.clocks(tx.Now)
	for _, e := range list {
		one, err := a.tickEntry(ctx, tx, e, now)
		if err != nil {
			return w, false, err
		}
		w.Add(one)
	}
	return w, len(list) == limit, nil
}

// tickAhead advances, within tx, up to limit entries after path after
// whose events are dealt with beyond now: after the wall clock was set
// back, one set back by more than its schedule allows forgets the past,
// and its events fire again as they come (cron.Item.Advance). It returns
// the path of the last entry looked at, "" when there were none.
func (a *App) tickAhead(ctx context.Context, tx *statedb.Tx, after string, limit int) (w TickWork, last string, err error) {
	list, err := tx.AheadSchedules(ctx, after, limit)
	if err != nil || len(list) == 0 {
		return w, "", err
	}
	now := a.clocks(tx.Now)
	for _, e := range list {
		one, err := a.tickEntry(ctx, tx, e, now)
		if err != nil {
			return w, "", err
		}
		w.Add(one)
		last = e.Path
	}
	return w, last, nil
}

// tickHandedOut advances, within tx, the entry at path that a hand-out
// just gave a job, if its next event has come and no tick has dealt with
// it yet: the event fires into the job now running, and the job's end
// makes the entry due at the event after, not at this one again.
func (a *App) tickHandedOut(ctx context.Context, tx *statedb.Tx, path string) error {
	e, ok, err := tx.DueSchedule(ctx, path)
	if err != nil || !ok {
		return err
	}
	_, err = a.tickEntry(ctx, tx, e, a.clocks(tx.Now))
	return err
}

// tickEntry advances the stateful cron of one entry at now and records
// it. An entry whose state the tick leaves as it was (the clock is behind
// it by less than its schedule allows) is not written.
func (a *App) tickEntry(ctx context.Context, tx *statedb.Tx, e statedb.Scheduled, now cron.Reading) (TickWork, error) {
	w := TickWork{Entries: 1}
	prev := cron.State{Wall: e.State.Wall, Mono: e.State.Mono, Boot: e.State.Boot, Handled: e.State.Handled}
	it, err := cronItem(e.Schedule)
	if err != nil {
		// Read once, it is never due by its schedule, and no tick looks
		// at it again until the configuration changes it.
		a.Log.Error("unreadable schedule", "path", e.Path, "err", err)
		w.Written++
		return w, tx.TickSchedule(ctx, e.Path, e.Schedule, e.State, false, statedb.NoEvent)
	}
	fire, next, rep := it.Advance(prev, now)
	due, ok, steps := it.NextDueFrom(prev, e.Next, e.Next != statedb.NoEvent, next)
	if !ok {
		due = statedb.NoEvent
	}
	w.Steps = rep.Steps + steps
	switch {
	case rep.Notable():
		a.Log.Warn("schedule caught up", "path", e.Path, "fired", fire, "report", rep)
	case fire:
		a.Log.Info("schedule fired", "path", e.Path, "running", e.Running, "report", rep)
	}
	if !fire && next.Handled == prev.Handled && due == e.Next {
		return w, nil
	}
	w.Written++
	st := statedb.CronState{Wall: next.Wall, Mono: next.Mono, Boot: next.Boot, Handled: next.Handled}
	return w, tx.TickSchedule(ctx, e.Path, e.Schedule, st, fire, due)
}

// DefaultSchedulerInterval is how often the Scheduler ticks: every
// second, so that an event runs within its second, as a hand-out no longer
// ticks but for the entry it hands out (tickHandedOut). Between events a
// tick is one probe of an index that finds nothing.
const DefaultSchedulerInterval = time.Second

// Scheduler is the WEBAPP's own loop that ticks the schedules and ends
// unconfirmed claims (App.Tick), so that the minions find due what the
// schedules make due, and a lorry whose minion died with its job never
// confirmed is handed out again.
type Scheduler struct {
	App   *App
	Every time.Duration
}

// Run ticks every sc.Every until ctx ends.
func (sc *Scheduler) Run(ctx context.Context) {
	every := sc.Every
	if every <= 0 {
		every = DefaultSchedulerInterval
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if _, err := sc.App.Tick(ctx); err != nil && ctx.Err() == nil {
			sc.App.Log.Warn("scheduler tick failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Tick advances every entry whose next event has come, in transactions of
// TickBatch entries, and, when the wall clock went back since the last
// tick (or at the first), every entry ahead of the clock. Then it ends the
// unconfirmed claims and samples the queues, at most once a minute, for
// the status page's chart of their waits. It returns what the ticks did.
//
// One Tick runs at a time, by any process: it holds the lease LeaseTick,
// taken in its first transaction, renewed in each of the others and
// given up in its last, so that a tick between events is two write
// transactions, as it was before the lease. A process that finds another
// holding it skips its round and does nothing: the other is ticking.
func (a *App) Tick(ctx context.Context) (TickWork, error) {
	return a.tick(ctx, 0)
}

// tick is Tick, waiting up to wait for the lease another process holds;
// when it does not get it, the answer is an ErrBusy error if wait is not
// zero.
func (a *App) tick(ctx context.Context, wait time.Duration) (TickWork, error) {
	a.tickMu.Lock()
	defer a.tickMu.Unlock()
	held := false
	if wait > 0 {
		var ok bool
		var err error
		ctx, ok, err = a.takeLease(ctx, LeaseTick, wait)
		if err != nil {
			return TickWork{}, err
		}
		if !ok {
			return TickWork{}, busy("ticking the schedules")
		}
		held = true
	}
	// Given up in the last transaction; here only if that one failed.
	defer func() {
		if held {
			a.releaseLease(ctx, LeaseTick)
		}
	}()
	work, now, prev, err := a.tickAllDue(ctx, &held)
	if err != nil || !held {
		return work, err // !held: another process is ticking
	}
	if !a.ticked || now < prev {
		if err := a.tickAllAhead(ctx, &work); err != nil {
			return work, err
		}
	}
	a.ticked = true
	if err := a.endTick(ctx); err != nil {
		return work, err
	}
	held = false
	return work, nil
}

// tickAllDue advances every entry whose next event has come, in
// transactions of TickBatch entries, under the lease LeaseTick: taken in
// the first transaction unless *held says it is held already, and *held
// set when it is. Nothing is ticked, and *held stays false, when another
// process holds it. It returns the time of this tick and of the last one.
func (a *App) tickAllDue(ctx context.Context, held *bool) (work TickWork, now, prev int64, err error) {
	for first, more := true, true; more; first = false {
		var took statedb.Lease
		taken := false
		err := a.DB.Update(ctx, func(tx *statedb.Tx) error {
			if first && !*held {
				l, ok, err := tx.TakeLease(ctx, LeaseTick, a.owner(), a.leaseTerm(LeaseTick))
				if err != nil || !ok {
					more = false
					return err
				}
				took, taken = l, true
			} else if err := a.checkLease(ctx, tx, LeaseTick); err != nil {
				return err
			}
			if first {
				var err error
				if prev, err = tx.LastTick(ctx); err != nil {
					return err
				}
			}
			var w TickWork
			var err error
			w, more, err = a.tickDue(ctx, tx, TickBatch)
			work.batch(w)
			// Every entry written leaves the range; one that did not
			// would be found again.
			more = more && w.Written > 0
			now = tx.Now
			return err
		})
		if err != nil {
			return work, now, prev, err
		}
		if taken {
			*held = true
			// Renewed, as every lease, until the tick gives it up: its
			// transactions' fence needs the lease as taken.
			a.keepLease(ctx, took)
		}
		if !*held {
			return work, now, prev, nil
		}
	}
	return work, now, prev, nil
}

// tickAllAhead advances every entry ahead of the clock, in transactions
// of TickBatch entries, under the lease LeaseTick, held.
func (a *App) tickAllAhead(ctx context.Context, work *TickWork) error {
	for after, done := "", false; !done; {
		err := a.DB.Update(ctx, func(tx *statedb.Tx) error {
			if err := a.checkLease(ctx, tx, LeaseTick); err != nil {
				return err
			}
			w, last, err := a.tickAhead(ctx, tx, after, TickBatch)
			work.batch(w)
			after, done = last, last == "" || w.Entries < TickBatch
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// endTick notes the time of the tick, ends the unconfirmed claims, samples
// the queues and gives up the lease LeaseTick, held, in one transaction.
func (a *App) endTick(ctx context.Context) error {
	// The lease is renewed meanwhile: that stops here, as the lease is
	// given up with this transaction.
	l, ok := a.heldLeaseOf(LeaseTick)
	defer a.stopKeeping(LeaseTick)()
	if !ok {
		return fmt.Errorf("the lease of %s is not held: %w", LeaseTick, statedb.ErrTaken)
	}
	return a.DB.Update(ctx, func(tx *statedb.Tx) error {
		if err := tx.CheckLease(ctx, l); err != nil {
			return err
		}
		// The next tick, of whichever process, finds the clock set back
		// behind this one.
		if err := tx.SetLastTick(ctx); err != nil {
			return err
		}
		if err := a.orphanClaimedJobs(ctx, tx); err != nil {
			return err
		}
		// The status page's chart of queue waits needs a sample a minute.
		if _, err := tx.SampleQueues(ctx); err != nil {
			return err
		}
		a.Log.Debug("lease released", "kind", LeaseTick, "owner", l.Owner, "at_ns", time.Now().UnixNano(), "token", l.Token)
		return tx.ReleaseLease(ctx, l)
	})
}
