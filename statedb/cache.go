package statedb

import (
	"context"
	"database/sql"
	"slices"
)

// Each session (one connection) keeps, between its transactions, what every
// hand-out would otherwise read or work out again: the queue list, the
// threads-schedules parsed and the entry of each in force, and each
// queue's choice for a hand-out. They are kept here, behind sessionCache,
// with the rules that say when they are stale:
//
//   - PRAGMA data_version changes when another connection, of this process
//     or another, commits: then everything kept is dropped (Tx.queues,
//     which every hand-out calls first). PostgreSQL has no such counter,
//     nor temporary triggers: there a trigger counts the changes to the
//     queues in queues_version, which each hand-out reads with its
//     settings, and the queue list is kept while the count stays
//     (Tx.queuesAt); the choices are found in each transaction.
//   - The write session's own changes to the entries of a queue are named
//     by temporary triggers in temp.touched_queues; the choices of those
//     queues are found again (Tx.keptHeads).
//   - A rollback, or this session's own change to the queues, drops it
//     all (forget).
//
// Nothing kept here is a rule of the data: a hand-out re-reads the row it
// chooses and checks it (pickLorry), and the write that claims it is
// guarded in SQL (markRunning).

// sessionCache is what a session keeps of the database's contents.
type sessionCache struct {
	// schedules are the queues' threads-schedules parsed, by their text.
	schedules map[string][]ThreadsEntry
	// queues is the queue list as last read, and queuesVersion the
	// connection's data_version then.
	queues        []Queue
	queuesVersion int64
	// active is the entry in force of each threads-schedule, by its text.
	active map[string]activeEntry
	// heads is each queue's choice for a hand-out (queueHeads) in the
	// second headsAt, kept with the queue list, by the kind of entry the
	// minion takes ("" for any).
	heads   map[string]map[string]sql.NullInt64
	headsAt int64
}

// forget drops what the session keeps of the database's contents: after
// a rollback, it may tell of changes that never happened.
func (c *sessionCache) forget() {
	c.queues = nil
	c.heads = nil
}

// touchedQueues are the write session's temporary table and triggers that
// name the queues whose entries it changes in a way that can change the
// queue's choice for a hand-out: an entry added, removed, moved in the run
// queue or between queues, handed out, finished, or given a new due time.
const touchedQueues = `
CREATE TEMP TABLE touched_queues (queue TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TEMP TRIGGER lorries_touched_insert AFTER INSERT ON main.lorries BEGIN
	INSERT OR IGNORE INTO touched_queues VALUES (new.queue);
END;
CREATE TEMP TRIGGER lorries_touched_delete AFTER DELETE ON main.lorries BEGIN
	INSERT OR IGNORE INTO touched_queues VALUES (old.queue);
END;
CREATE TEMP TRIGGER lorries_touched_update AFTER UPDATE OF queue, queue_pos, running_job, next_due, schedule, cron_next, kind ON main.lorries BEGIN
	INSERT OR IGNORE INTO touched_queues VALUES (old.queue), (new.queue);
END;`

// keptHeads is the map of each queue's choice for a hand-out to a minion
// that takes kind ("" for any) kept for tx.Now's second, without the
// choices of the queues whose entries were changed since
// (temp.touched_queues), which it empties; n sizes a new map. The caller
// fills in the choices it finds.
func (tx *Tx) keptHeads(ctx context.Context, kind string, n int) (map[string]sql.NullInt64, error) {
	return tx.drv.keptHeads(ctx, tx, kind, n)
}

// threadsSchedule parses a stored schedule once per session: a hand-out
// must not parse crontab items every time.
func (tx *Tx) threadsSchedule(text string) ([]ThreadsEntry, error) {
	c := &tx.s.cache
	if text == "" {
		return nil, nil
	}
	if e, ok := c.schedules[text]; ok {
		return e, nil
	}
	e, err := ParseThreadsSchedule(text)
	if err != nil {
		return nil, err
	}
	if c.schedules == nil {
		c.schedules = map[string][]ThreadsEntry{}
	}
	c.schedules[text] = e
	return e, nil
}

// threadsNow is ThreadsAt for q at tx.Now. Which entry of a schedule is in
// force is worked out once a second per schedule, as every hand-out needs
// it for every queue.
func (tx *Tx) threadsNow(q Queue) (*int64, error) {
	if q.Schedule == "" {
		return q.Threads, nil
	}
	c := &tx.s.cache
	sched, err := tx.threadsSchedule(q.Schedule)
	if err != nil {
		return nil, err
	}
	a, ok := c.active[q.Schedule]
	if !ok || a.at != tx.Now {
		a.at = tx.Now
		_, a.entry = ThreadsAt(q.Threads, sched, tx.Now)
		if c.active == nil || len(c.active) > maxActiveKept {
			c.active = map[string]activeEntry{}
		}
		c.active[q.Schedule] = a
	}
	if a.entry < 0 {
		return q.Threads, nil
	}
	return sched[a.entry].Threads, nil
}

// activeEntry is the entry of a threads-schedule in force at a second, -1
// for none.
type activeEntry struct {
	at    int64
	entry int
}

// maxActiveKept bounds the schedules a session keeps the entry in force
// of; past it they are worked out again.
const maxActiveKept = 1000

// Queues lists the queues by name, with the default queue whether or not
// it has a section.
func (tx *Tx) Queues(ctx context.Context) ([]Queue, error) {
	qs, err := tx.queues(ctx)
	return slices.Clone(qs), err
}

// queues is Queues without the copy: the session's list, which the caller
// must not change.
func (tx *Tx) queues(ctx context.Context) ([]Queue, error) {
	return tx.drv.queues(ctx, tx)
}

// queuesAt is queues for a hand-out, which on PostgreSQL has read the
// count of changes to the queues (handOutState): the list is kept while
// the count stays.
func (tx *Tx) queuesAt(ctx context.Context, st handOutState) ([]Queue, error) {
	return tx.drv.queuesAt(ctx, tx, st)
}
