package statedb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"lorrycontroller/cron"
)

// DefaultQueue is the queue of every entry whose section names none. It
// exists without a queue section, and then has no limit.
const DefaultQueue = "default"

// Sort orders of a queue: which of its due entries goes first.
const (
	SortQueueOrder = "queue-order" // the run-queue order
	SortFIFO       = "fifo"        // the one due longest
	SortLIFO       = "lifo"        // the one due most recently
)

// Queue is a queue section of the configuration.
type Queue struct {
	Name string
	// Threads is the most jobs of the queue running at once across all
	// minions; nil is no limit.
	Threads *int64
	Sort    string
	// Schedule is the "threads-schedule" list as JSON, "" for none: each
	// entry's threads apply from when its schedule fires until another
	// entry's fires.
	Schedule string
}

// ThreadsEntry is one entry of a queue's threads-schedule.
type ThreadsEntry struct {
	Item    *cron.Item
	Threads *int64
}

// ParseThreadsSchedule reads a threads-schedule list from its JSON text, as
// Queue.Schedule holds it.
func ParseThreadsSchedule(text string) ([]ThreadsEntry, error) {
	if text == "" {
		return nil, nil
	}
	var raw []struct {
		Schedule json.RawMessage `json:"schedule"`
		Threads  *int64          `json:"threads"`
	}
	if err := json.Unmarshal([]byte(text), &raw); err != nil {
		return nil, fmt.Errorf("threads-schedule: %w", err)
	}
	out := make([]ThreadsEntry, len(raw))
	for i, r := range raw {
		it, err := cron.Parse(r.Schedule, nil)
		if err != nil {
			return nil, fmt.Errorf("threads-schedule item [%d]: %w", i, err)
		}
		out[i] = ThreadsEntry{Item: it, Threads: r.Threads}
	}
	return out, nil
}

// ThreadsAt is the limit of a queue at time now: that of the entry of its
// schedule that fired last, or Threads before any has fired. active is the
// index of that entry, -1 for none.
func ThreadsAt(threads *int64, sched []ThreadsEntry, now int64) (limit *int64, active int) {
	if len(sched) == 0 {
		return threads, -1
	}
	items := make([]*cron.Item, len(sched))
	for i, e := range sched {
		items[i] = e.Item
	}
	i, ok := cron.Latest(items, now)
	if !ok {
		return threads, -1
	}
	return sched[i].Threads, i
}

// threadsSchedule parses a stored schedule once per session: a hand-out
// must not parse crontab items every time.
func (tx *Tx) threadsSchedule(text string) ([]ThreadsEntry, error) {
	if text == "" {
		return nil, nil
	}
	if e, ok := tx.s.schedules[text]; ok {
		return e, nil
	}
	e, err := ParseThreadsSchedule(text)
	if err != nil {
		return nil, err
	}
	if tx.s.schedules == nil {
		tx.s.schedules = map[string][]ThreadsEntry{}
	}
	tx.s.schedules[text] = e
	return e, nil
}

// threadsNow is ThreadsAt for q at tx.Now. Which entry of a schedule is in
// force is worked out once a second per schedule, as every hand-out needs
// it for every queue.
func (tx *Tx) threadsNow(q Queue) (*int64, error) {
	if q.Schedule == "" {
		return q.Threads, nil
	}
	sched, err := tx.threadsSchedule(q.Schedule)
	if err != nil {
		return nil, err
	}
	a, ok := tx.s.active[q.Schedule]
	if !ok || a.at != tx.Now {
		a.at = tx.Now
		_, a.entry = ThreadsAt(q.Threads, sched, tx.Now)
		if tx.s.active == nil || len(tx.s.active) > maxActiveKept {
			tx.s.active = map[string]activeEntry{}
		}
		tx.s.active[q.Schedule] = a
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
	var version int64
	if err := tx.queryRow(ctx, `PRAGMA data_version`).Scan(&version); err != nil {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	if tx.s.queues != nil && tx.s.queuesVersion == version {
		return tx.s.queues, nil
	}
	// Another connection's commit may have changed anything.
	tx.s.forget()
	qs, err := tx.readQueues(ctx)
	if err != nil {
		return nil, err
	}
	tx.s.queues, tx.s.queuesVersion = qs, version
	return qs, nil
}

func (tx *Tx) readQueues(ctx context.Context) ([]Queue, error) {
	rows, err := tx.query(ctx, `SELECT name, threads, sort, schedule FROM queues ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	defer rows.Close()
	var out []Queue
	hasDefault := false
	for rows.Next() {
		var q Queue
		var threads sql.NullInt64
		if err := rows.Scan(&q.Name, &threads, &q.Sort, &q.Schedule); err != nil {
			return nil, fmt.Errorf("list queues: %w", err)
		}
		q.Threads = nullInt(threads)
		hasDefault = hasDefault || q.Name == DefaultQueue
		out = append(out, q)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	if !hasDefault {
		out = append(out, Queue{Name: DefaultQueue, Sort: SortQueueOrder})
		sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	}
	return out, nil
}

// QueueConfig is the queues of a configuration and which queue each of its
// entries and upstream hosts is in.
type QueueConfig struct {
	Queues  []Queue
	Lorries map[string]string // lorry path to queue; absent or "" is the default queue
	Hosts   map[string]string // upstream host name to queue, for its generated lorries; "" is the default
	// LorriesPlaced says that the lorries were put in their queues as
	// they were applied (NewLorry.Queue), and Lorries is not used: a
	// configuration applied in batches is not held whole.
	LorriesPlaced bool
}

// SetConfigQueues makes the stored queues exactly c.Queues and puts the
// configuration's lorries and the hosts' generated lorries in their
// queues. Entries of a queue that no longer exists (kept lorries of a
// broken file) go to the default queue. Running jobs keep the queue they
// were handed out in.
func (tx *Tx) SetConfigQueues(ctx context.Context, c QueueConfig) error {
	names := []string{DefaultQueue}
	for _, q := range c.Queues {
		if slices.Contains(names[1:], q.Name) {
			return fmt.Errorf("queue %q given twice: %w", q.Name, ErrInvalid)
		}
		if q.Name != DefaultQueue {
			names = append(names, q.Name)
		}
	}
	tx.s.forget()
	if _, err := tx.exec(ctx, `DELETE FROM queues`); err != nil {
		return fmt.Errorf("store queues: %w", err)
	}
	for _, q := range c.Queues {
		if q.Sort == "" {
			q.Sort = SortQueueOrder
		}
		if _, err := tx.exec(ctx, `INSERT INTO queues (name, threads, sort, schedule) VALUES (?, ?, ?, ?)`,
			q.Name, q.Threads, q.Sort, q.Schedule); err != nil {
			return fmt.Errorf("store queue %q: %w", q.Name, err)
		}
	}
	known, err := json.Marshal(names)
	if err != nil {
		return err
	}
	if _, err := tx.exec(ctx, `UPDATE lorries SET queue = ?
		WHERE queue NOT IN (SELECT value FROM json_each(?))`, DefaultQueue, string(known)); err != nil {
		return fmt.Errorf("move lorries of removed queues: %w", err)
	}
	if _, err := tx.exec(ctx, `UPDATE hosts SET queue = ?
		WHERE queue NOT IN (SELECT value FROM json_each(?))`, DefaultQueue, string(known)); err != nil {
		return fmt.Errorf("move hosts of removed queues: %w", err)
	}
	if !c.LorriesPlaced {
		if err := tx.placeConfigLorries(ctx, c.Lorries); err != nil {
			return err
		}
	}
	for h, q := range c.Hosts {
		if q == "" {
			q = DefaultQueue
		}
		if _, err := tx.exec(ctx, `UPDATE hosts SET queue = ? WHERE name = ?`, q, h); err != nil {
			return fmt.Errorf("put host %q in queue %q: %w", h, q, err)
		}
		if err := tx.syncHostQueue(ctx, h); err != nil {
			return err
		}
	}
	return nil
}

// notIn is the condition that path is none of n values, for queuedPaths.
// SQLite bounds the number of parameters, so many paths go as one JSON
// list instead.
func notIn(n int) string {
	if n == 0 {
		return ""
	}
	return ` AND path NOT IN (SELECT value FROM json_each(?))`
}

func queuedPaths(m map[string]string) []any {
	if len(m) == 0 {
		return nil
	}
	paths := make([]string, 0, len(m))
	for p := range m {
		paths = append(paths, p)
	}
	b, _ := json.Marshal(paths)
	return []any{string(b)}
}

// syncHostQueue puts the generated lorries of host in the host's queue.
func (tx *Tx) syncHostQueue(ctx context.Context, host string) error {
	_, err := tx.exec(ctx, `UPDATE lorries SET queue = COALESCE((SELECT queue FROM hosts WHERE name = ?), ?)
		WHERE generated = 1 AND from_host = ? AND queue != COALESCE((SELECT queue FROM hosts WHERE name = ?), ?)`,
		host, DefaultQueue, host, host, DefaultQueue)
	if err != nil {
		return fmt.Errorf("put lorries of host %q in its queue: %w", host, err)
	}
	return nil
}

// HostMaxJobs is the cap on jobs running at once on the minion host
// named; nil is no cap.
func (tx *Tx) HostMaxJobs(ctx context.Context, host string) (*int64, error) {
	var n int64
	err := tx.queryRow(ctx, `SELECT max_jobs FROM host_limits WHERE host = ?`, host).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read max_jobs of host %s: %w", host, err)
	}
	return &n, nil
}

// SetHostMaxJobs caps the jobs running at once on the minion host named,
// however many minions run there; nil removes the cap.
func (tx *Tx) SetHostMaxJobs(ctx context.Context, host string, n *int64) error {
	if host == "" {
		return fmt.Errorf("no host named: %w", ErrInvalid)
	}
	if n == nil {
		if _, err := tx.exec(ctx, `DELETE FROM host_limits WHERE host = ?`, host); err != nil {
			return fmt.Errorf("remove max_jobs of host %s: %w", host, err)
		}
		return nil
	}
	if *n < 0 {
		return fmt.Errorf("max_jobs %d is negative: %w", *n, ErrInvalid)
	}
	_, err := tx.exec(ctx, `INSERT INTO host_limits (host, max_jobs) VALUES (?, ?)
		ON CONFLICT (host) DO UPDATE SET max_jobs = excluded.max_jobs`, host, *n)
	if err != nil {
		return fmt.Errorf("write max_jobs of host %s: %w", host, err)
	}
	return nil
}

// HostLimits lists the capped minion hosts and their caps.
func (tx *Tx) HostLimits(ctx context.Context) (map[string]int64, error) {
	rows, err := tx.query(ctx, `SELECT host, max_jobs FROM host_limits ORDER BY host`)
	if err != nil {
		return nil, fmt.Errorf("list host limits: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var h string
		var n int64
		if err := rows.Scan(&h, &n); err != nil {
			return nil, fmt.Errorf("list host limits: %w", err)
		}
		out[h] = n
	}
	return out, rows.Err()
}

// QueueState is a queue as the status shows it.
type QueueState struct {
	Queue
	// Now is the limit in force now (nil: none), and Active the index of
	// the schedule entry that set it (-1: Threads applies).
	Now    *int64
	Active int
	// Entries is the parsed schedule.
	Entries []ThreadsEntry
	Running int64
	Due     int64
	// OldestDue is when the entry that has been due longest fell due; nil
	// when none is due.
	OldestDue *int64
}

// QueueStates lists every queue with its limit now, its running jobs and
// its due entries.
func (tx *Tx) QueueStates(ctx context.Context) ([]QueueState, error) {
	qs, err := tx.Queues(ctx)
	if err != nil {
		return nil, err
	}
	live, err := tx.runningByQueueAndHost(ctx, "")
	if err != nil {
		return nil, err
	}
	out := make([]QueueState, len(qs))
	for i, q := range qs {
		st := QueueState{Queue: q, Running: live.byQueue[q.Name]}
		if st.Entries, err = tx.threadsSchedule(q.Schedule); err != nil {
			return nil, fmt.Errorf("queue %q: %w", q.Name, err)
		}
		st.Now, st.Active = ThreadsAt(q.Threads, st.Entries, tx.Now)
		var oldest sql.NullInt64
		err := tx.queryRow(ctx, `SELECT COUNT(*), MIN(next_due) FROM lorries INDEXED BY lorries_queue_due
			WHERE queue = ? AND running_job IS NULL AND next_due <= ?`, q.Name, tx.Now).Scan(&st.Due, &oldest)
		if err != nil {
			return nil, fmt.Errorf("count due lorries of queue %q: %w", q.Name, err)
		}
		st.OldestDue = nullInt(oldest)
		out[i] = st
	}
	return out, nil
}

// runningByQueueAndHost counts the live (claimed or running) jobs by
// queue, those on the minion host named, and all of them. The running jobs are few (one per busy minion), so
// this is cheap however long the run queue is.
func (tx *Tx) runningByQueueAndHost(ctx context.Context, host string) (liveCounts, error) {
	rows, err := tx.query(ctx, liveCountQuery)
	if err != nil {
		return liveCounts{}, fmt.Errorf("count running jobs: %w", err)
	}
	defer rows.Close()
	c := liveCounts{byQueue: map[string]int64{}}
	for rows.Next() {
		var q, h string
		var n int64
		if err := rows.Scan(&q, &h, &n); err != nil {
			return liveCounts{}, fmt.Errorf("count running jobs: %w", err)
		}
		c.byQueue[q] += n
		c.all += n
		if h == host {
			c.onHost += n
		}
	}
	return c, rows.Err()
}

// liveCountQuery counts the live jobs by queue and host, from their
// partial index alone.
const liveCountQuery = `SELECT queue, host, COUNT(*) FROM jobs INDEXED BY jobs_live_queue
	WHERE ` + liveStatus + ` GROUP BY queue, host`

// liveCounts are the live jobs by queue, on one host, and in all.
type liveCounts struct {
	byQueue     map[string]int64
	onHost, all int64
}

// takesQueue says whether a minion that asked for queues and ignores
// ignore takes work from queue q. queues wins if both are given.
func takesQueue(q string, queues, ignore []string) bool {
	if len(queues) > 0 {
		return slices.Contains(queues, q)
	}
	return !slices.Contains(ignore, q)
}

// pickLorry finds the entry to hand to minion m within every limit but
// the global max_jobs: the queue's threads as of now, the minion host's
// cap and the minion's queues. Each open queue offers its first due entry
// by its sort order; of those, the one first in the run queue is taken.
// A queue that is full, or not the minion's, is never looked into, so a
// full queue of many due entries costs nothing. When nothing may be
// handed out, idle says why.
func (tx *Tx) pickLorry(ctx context.Context, m MinionID, live liveCounts) (l Lorry, idle string, err error) {
	qs, err := tx.queues(ctx)
	if err != nil {
		return Lorry{}, "", err
	}
	hostMax, err := tx.HostMaxJobs(ctx, m.Host)
	if err != nil {
		return Lorry{}, "", err
	}
	if hostMax != nil && live.onHost >= *hostMax {
		return Lorry{}, fmt.Sprintf("%d jobs running on host %s, its max_jobs is %d", live.onHost, m.Host, *hostMax), nil
	}
	// open is the sort of each open queue by its name.
	open := make(map[string]string, len(qs))
	var full []string
	for _, q := range qs {
		if !takesQueue(q.Name, m.Queues, m.IgnoreQueues) {
			continue
		}
		limit, err := tx.threadsNow(q)
		if err != nil {
			return Lorry{}, "", fmt.Errorf("queue %q: %w", q.Name, err)
		}
		if limit != nil && live.byQueue[q.Name] >= *limit {
			full = append(full, q.Name)
			continue
		}
		open[q.Name] = q.Sort
	}
	if len(open) == 0 {
		if len(full) > 0 {
			return Lorry{}, "queues full: " + strings.Join(full, ", "), nil
		}
		return Lorry{}, "this minion takes none of the queues", nil
	}
	kind := m.onlyKind()
	for try := 0; ; try++ {
		var heads map[string]sql.NullInt64
		if kind != "" {
			heads, err = tx.queueHeadsOfKind(ctx, open, kind)
		} else {
			heads, err = tx.queueHeads(ctx, qs, open)
		}
		if err != nil {
			return Lorry{}, "", err
		}
		var pos sql.NullInt64
		for q := range open {
			if h := heads[q]; h.Valid && (!pos.Valid || h.Int64 < pos.Int64) {
				pos = h
			}
		}
		if !pos.Valid {
			why := "no lorry is due in the queues this minion takes"
			if kind != "" {
				why = "no " + kind + " is due in the queues this minion takes"
			}
			if len(full) > 0 {
				why += " that are not full (full: " + strings.Join(full, ", ") + ")"
			}
			return Lorry{}, why, nil
		}
		l, err = scanLorry(tx.queryRow(ctx, `SELECT `+lorryColumns+` FROM lorries WHERE queue_pos = ?`, pos.Int64))
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return Lorry{}, "", fmt.Errorf("read due lorry at %d: %w", pos.Int64, err)
		}
		if err == nil && l.RunningJob == nil && l.NextDue <= tx.Now && open[l.Queue] != "" && (kind == "" || l.Kind == kind) {
			return l, "", nil
		}
		// A choice kept from before that no longer holds would be a
		// change the triggers missed: find every choice again.
		if try > 0 {
			return Lorry{}, "", fmt.Errorf("the entry at %d chosen for a hand-out is not due", pos.Int64)
		}
		tx.s.heads = nil
	}
}

// queueHeads answers each open queue's choice for a hand-out: its first
// due idle entry by its sort order (the run-queue order, the one due
// longest, or the one due most recently), or NULL when none is due. The
// choices are kept through the second, in which no entry falls due that
// was not due at its start, and only the queues whose entries changed
// since (temp.touched_queues), and those not asked yet, are asked again:
// one search of a queue's index each, however many entries it holds.
// The caller has read qs with Queues, which drops the kept choices when
// another connection has committed.
func (tx *Tx) queueHeads(ctx context.Context, qs []Queue, open map[string]string) (map[string]sql.NullInt64, error) {
	rows, err := tx.query(ctx, `DELETE FROM temp.touched_queues RETURNING queue`)
	if err != nil {
		return nil, fmt.Errorf("read the queues changed: %w", err)
	}
	var touched []string
	for rows.Next() {
		var q string
		if err := rows.Scan(&q); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read the queues changed: %w", err)
		}
		touched = append(touched, q)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the queues changed: %w", err)
	}
	s := tx.s
	if s.heads == nil || s.headsAt != tx.Now {
		s.heads, s.headsAt = make(map[string]sql.NullInt64, len(qs)), tx.Now
	}
	for _, q := range touched {
		delete(s.heads, q)
	}
	// ask is the JSON object of the open queues not known, names to
	// sorts, as headsQuery takes it.
	ask := []byte{'{'}
	for _, q := range qs {
		sort, isOpen := open[q.Name]
		if _, known := s.heads[q.Name]; !isOpen || known {
			continue
		}
		if len(ask) > 1 {
			ask = append(ask, ',')
		}
		ask = append(appendJSONString(ask, q.Name), ':')
		ask = appendJSONString(ask, sort)
	}
	if len(ask) == 1 {
		return s.heads, nil
	}
	ask = append(ask, '}')
	rows, err = tx.query(ctx, headsQuery, tx.Now, string(ask))
	if err != nil {
		return nil, fmt.Errorf("find due lorries: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var q string
		var pos sql.NullInt64
		if err := rows.Scan(&q, &pos); err != nil {
			return nil, fmt.Errorf("find due lorries: %w", err)
		}
		s.heads[q] = pos
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("find due lorries: %w", err)
	}
	return s.heads, nil
}

// queueHeadsOfKind is queueHeads for a minion that takes only entries of
// kind: each open queue's first due idle entry of that kind. The entries
// of the other kind are passed over in the walk of each queue's index, so
// a queue whose head is of the other kind still offers the next one of
// this kind. The choices are not kept: they are not every minion's.
func (tx *Tx) queueHeadsOfKind(ctx context.Context, open map[string]string, kind string) (map[string]sql.NullInt64, error) {
	ask := []byte{'{'}
	for _, name := range slices.Sorted(maps.Keys(open)) {
		if len(ask) > 1 {
			ask = append(ask, ',')
		}
		ask = append(appendJSONString(ask, name), ':')
		ask = appendJSONString(ask, open[name])
	}
	ask = append(ask, '}')
	rows, err := tx.query(ctx, headsOfKindQuery, tx.Now, string(ask), kind)
	if err != nil {
		return nil, fmt.Errorf("find due lorries of kind %s: %w", kind, err)
	}
	defer rows.Close()
	heads := make(map[string]sql.NullInt64, len(open))
	for rows.Next() {
		var q string
		var pos sql.NullInt64
		if err := rows.Scan(&q, &pos); err != nil {
			return nil, fmt.Errorf("find due lorries of kind %s: %w", kind, err)
		}
		heads[q] = pos
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("find due lorries of kind %s: %w", kind, err)
	}
	return heads, nil
}

// headsOfKindQuery is headsQuery with each queue's entries narrowed to the
// kind ?3.
var headsOfKindQuery = strings.ReplaceAll(headsQuery, "WHERE queue = j.key AND", "WHERE queue = j.key AND kind = ?3 AND")

// appendJSONString appends s to b as a JSON string.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// headsQuery finds the choice of each queue of ?2 (a JSON object of queue
// name to sort order): the queue position of its first due entry by its
// sort order, NULL when none is due. Each branch walks one index of one
// queue from its first due entry. The EXISTS probe keeps a queue-order queue with nothing
// due from being walked to its end; it sits inside the CASE, where it
// stays a subquery of its one queue: as a term of the WHERE clause SQLite
// turns it into a join, evaluating the CASE for every due entry of every
// queue, which took a second per hand-out with 100,000 due entries in 50
// queues. The queue-order walk passes over no entry waiting for its
// schedule's next event (next_due = cron_next): such an entry is handed
// out once a tick has fired it, which moves its next_due off cron_next.
const headsQuery = `SELECT j.key, CASE
		WHEN j.value = 'fifo' THEN (SELECT queue_pos FROM lorries INDEXED BY lorries_queue_due
			WHERE queue = j.key AND running_job IS NULL AND next_due <= ?1
			ORDER BY next_due, queue_pos LIMIT 1)
		WHEN j.value = 'lifo' THEN (SELECT queue_pos FROM lorries INDEXED BY lorries_queue_due
			WHERE queue = j.key AND running_job IS NULL AND next_due <= ?1
			ORDER BY next_due DESC, queue_pos DESC LIMIT 1)
		WHEN EXISTS (SELECT 1 FROM lorries INDEXED BY lorries_queue_due
			WHERE queue = j.key AND running_job IS NULL AND next_due <= ?1)
		THEN (SELECT queue_pos FROM lorries INDEXED BY lorries_queue_order
			WHERE queue = j.key AND running_job IS NULL AND (schedule = '' OR next_due != cron_next)
				AND next_due <= ?1
			ORDER BY queue_pos LIMIT 1)
		END
	FROM json_each(?2) AS j`

// placeConfigLorries puts the configuration's lorries in their queues:
// lorries maps a path to its queue, and a lorry it leaves out is in the
// default queue.
func (tx *Tx) placeConfigLorries(ctx context.Context, lorries map[string]string) error {
	for p, q := range lorries {
		if q == "" {
			q = DefaultQueue
		}
		if _, err := tx.exec(ctx, `UPDATE lorries SET queue = ? WHERE path = ? AND generated = 0 AND queue != ?`,
			q, p, q); err != nil {
			return fmt.Errorf("put lorry %q in queue %q: %w", p, q, err)
		}
	}
	// A lorry the configuration defines without a queue is in the default
	// one, even if it was in another before.
	if _, err := tx.exec(ctx, `UPDATE lorries SET queue = ? WHERE generated = 0 AND queue != ?`+
		notIn(len(lorries)), append([]any{DefaultQueue, DefaultQueue}, queuedPaths(lorries)...)...); err != nil {
		return fmt.Errorf("put lorries in the default queue: %w", err)
	}
	return nil
}
