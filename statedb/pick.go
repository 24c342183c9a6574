package statedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"

	"lorrycontroller.dev/lc/rules"
)

// openQueues finds the queues that may hand an entry to minion m within
// every limit but the global max_jobs: the queue's threads as of now,
// the minion host's cap and the minion's queues, st as read first. A
// queue that is full, or not the minion's, is never looked into, so a
// full queue of many due entries costs nothing. When none may, idle says
// why.
func (tx *Tx) openQueues(ctx context.Context, m MinionID, live liveCounts, st handOutState) (q openSet, idle string, err error) {
	hostMax := st.hostMax
	qs, err := tx.queuesAt(ctx, st)
	if err != nil {
		return openSet{}, "", err
	}
	if idle := rules.HostFull(m.Host, live.onHost, hostMax); idle != "" {
		return openSet{}, idle, nil
	}
	q = openSet{all: qs, open: make(map[string]string, len(qs)), kind: m.onlyKind()}
	for _, queue := range qs {
		if !rules.TakesQueue(queue.Name, m.Queues, m.IgnoreQueues) {
			continue
		}
		limit, err := tx.threadsNow(queue)
		if err != nil {
			return openSet{}, "", fmt.Errorf("queue %q: %w", queue.Name, err)
		}
		if rules.QueueFull(limit, live.byQueue[queue.Name]) {
			q.full = append(q.full, queue.Name)
			continue
		}
		q.open[queue.Name] = queue.Sort
	}
	if len(q.open) == 0 {
		return openSet{}, rules.NoOpenQueue(q.full), nil
	}
	return q, "", nil
}

// openSet is what openQueues found: the queues as read, the sort of
// each open queue by its name, the full ones, and the one kind of entry
// the minion takes ("" for any).
type openSet struct {
	all  []Queue
	open map[string]string
	full []string
	kind string
}

// noneDue is why there is nothing to hand out when no open queue has a
// due entry.
func (q openSet) noneDue() string { return rules.NoneDue(q.kind, q.full) }

// pickLorry finds, on SQLite, the entry to hand out from the open queues
// of q: each offers its first due entry by its sort order, and of those
// the one first in the run queue is taken. When none is due, idle says
// so. (PostgreSQL finds and claims it in one statement: claimFirst.)
func (tx *Tx) pickLorry(ctx context.Context, q openSet) (l Lorry, idle string, err error) {
	for try := 0; ; try++ {
		heads, err := tx.queueHeads(ctx, q.all, q.open, q.kind)
		if err != nil {
			return Lorry{}, "", err
		}
		pos, ok := rules.PickHead(q.open, func(name string) (int64, bool) {
			h := heads[name]
			return h.Int64, h.Valid
		})
		if !ok {
			return Lorry{}, q.noneDue(), nil
		}
		l, err = scanLorry(tx.queryRow(ctx, `SELECT `+lorryColumns+` FROM lorries WHERE queue_pos = $1`, pos))
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return Lorry{}, "", fmt.Errorf("read due lorry at %d: %w", pos, err)
		}
		if err == nil && q.due(l, tx.Now) {
			return l, "", nil
		}
		// A choice kept from before that no longer holds would be a
		// change the triggers missed: find every choice again.
		if try > 0 {
			return Lorry{}, "", fmt.Errorf("the entry at %d chosen for a hand-out is not due", pos)
		}
		tx.s.cache.heads = nil
	}
}

// due says whether l may be handed out from q at now.
func (q openSet) due(l Lorry, now int64) bool {
	return rules.Offerable(q.open, q.kind, l.Queue, l.Kind, l.RunningJob != nil, l.NextDue, now)
}

// queueHeads answers each open queue's choice for a hand-out to a minion
// that takes kind ("" for any): its first due idle entry (of that kind)
// by its sort order (the run-queue order, the one due longest, or the one
// due most recently), or NULL when none is due. The choices are kept
// through the second, in which no entry falls due that was not due at its
// start, and only the queues whose entries changed since
// (temp.touched_queues), and those not asked yet, are asked again: one
// search of a queue's index each, however many entries it holds. The
// choices for each kind are kept apart: a minion that takes only lorries
// asking after one that takes anything finds its own kept, and does not
// walk every open queue again. The caller has read qs with Queues, which
// drops the kept choices when another connection has committed.
func (tx *Tx) queueHeads(ctx context.Context, qs []Queue, open map[string]string, kind string) (map[string]sql.NullInt64, error) {
	heads, err := tx.keptHeads(ctx, kind, len(qs))
	if err != nil {
		return nil, err
	}
	// ask is the JSON object of the open queues not known, names to
	// sorts, as headsQuery takes it.
	ask := []byte{'{'}
	for _, q := range qs {
		sort, isOpen := open[q.Name]
		if _, known := heads[q.Name]; !isOpen || known {
			continue
		}
		if len(ask) > 1 {
			ask = append(ask, ',')
		}
		ask = append(appendJSONString(ask, q.Name), ':')
		ask = appendJSONString(ask, sort)
	}
	if len(ask) == 1 {
		return heads, nil
	}
	ask = append(ask, '}')
	query, args, what := tx.q.heads, []any{tx.Now, string(ask)}, "find due lorries"
	if kind != "" {
		query, args, what = tx.q.headsOfKind, append(args, kind), "find due lorries of kind "+kind
	}
	rows, err := tx.query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer rows.Close()
	for rows.Next() {
		var q string
		var pos sql.NullInt64
		if err := rows.Scan(&q, &pos); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		heads[q] = pos
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return heads, nil
}

// askJSON is the JSON object of the queues of open, names to sorts, as
// headsQuery takes it.
func askJSON(open map[string]string) string {
	ask := []byte{'{'}
	for _, name := range slices.Sorted(maps.Keys(open)) {
		if len(ask) > 1 {
			ask = append(ask, ',')
		}
		ask = append(appendJSONString(ask, name), ':')
		ask = appendJSONString(ask, open[name])
	}
	return string(append(ask, '}'))
}

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
