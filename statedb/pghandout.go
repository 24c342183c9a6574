package statedb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// pgHandOut is what a hand-out on PostgreSQL reads first, kept for the
// hand-outs after it in the same transaction (Tx.handOut): the settings,
// the hosts' max_jobs, whether anything is due, the count of changes to
// the queues, and the live jobs by queue and host, to which the
// transaction's own claims are added. The hand-outs' transactions hold
// the write lock (pgBeginClaims): nothing but a job report, which only
// ends jobs, changes any of it meanwhile, so the counts kept are too
// high at worst, never too low. A hand-out that ends jobs of its own
// (endOwnedJobs) drops it. The state of the asking minion (retired, or
// with a live job) is the claim's own guard (claimFirst), and is read
// when there is nothing to claim.
type pgHandOut struct {
	running bool
	max     *int64
	hostMax map[string]int64
	anyDue  bool
	// claimed says that the transaction has claimed entries since anyDue
	// was read, which may have left nothing due (idleAfterClaims).
	claimed bool
	version int64
	// live counts the live jobs by queue and host.
	live map[[2]string]int64
	// heads are the queues' choices for a hand-out (headsQuery) found in
	// the transaction, by the kind of entry the minion takes ("" for
	// any), then by queue: a queue's is found again only after a claim
	// from it. (A lorry that a report makes due again meanwhile waits
	// for the next transaction.)
	heads map[string]map[string]sql.NullInt64
}

// pgAnyDueQuery says whether any idle entry is due at $1, from the first
// entry of the partial index of idle entries by due time.
const pgAnyDueQuery = `SELECT (SELECT MIN(next_due) FROM lorries WHERE running_job IS NULL) <= $1`

// pgHandOutQuery reads pgHandOut; it asks whether anything is due as
// pgAnyDueQuery does.
const pgHandOutQuery = `SELECT (SELECT value FROM settings WHERE key = $1), (SELECT value FROM settings WHERE key = $2),
		(SELECT json_object_agg(host, max_jobs) FROM host_limits),
		(SELECT MIN(next_due) FROM lorries WHERE running_job IS NULL) <= $3,
		(SELECT n FROM queues_version),
		(SELECT json_agg(json_build_array(queue, host, n)) FROM live_counts WHERE n > 0)`

// pgHandOutState is handOutState on PostgreSQL, for minion m, with its
// own state not known.
func (tx *Tx) pgHandOutState(ctx context.Context, m MinionID) (handOutState, error) {
	if tx.handOut == nil {
		b, err := tx.readHandOut(ctx)
		if err != nil {
			return handOutState{}, err
		}
		tx.handOut = b
	}
	b := tx.handOut
	st := handOutState{running: b.running, max: b.max, anyDue: b.anyDue, queuesVersion: b.version,
		live: &liveCounts{byQueue: map[string]int64{}}}
	if n, ok := b.hostMax[m.Host]; ok {
		st.hostMax = &n
	}
	for k, n := range b.live {
		st.live.byQueue[k[0]] += n
		st.live.all += n
		if k[1] == m.Host {
			st.live.onHost += n
		}
	}
	return st, nil
}

// readHandOut reads pgHandOut in one statement.
func (tx *Tx) readHandOut(ctx context.Context) (*pgHandOut, error) {
	var run, limit, hosts, live sql.NullString
	var due sql.NullBool
	b := &pgHandOut{hostMax: map[string]int64{}, live: map[[2]string]int64{}, heads: map[string]map[string]sql.NullInt64{}}
	err := tx.queryRow(ctx, pgHandOutQuery, settingRunningQueue, settingMaxJobs, tx.Now).
		Scan(&run, &limit, &hosts, &due, &b.version, &live)
	if err != nil {
		return nil, fmt.Errorf("read the hand-out's settings: %w", err)
	}
	b.running, b.anyDue = !run.Valid || run.String == "1", due.Valid && due.Bool
	if b.max, err = maxJobsValue(limit); err != nil {
		return nil, err
	}
	if hosts.Valid {
		if err := json.Unmarshal([]byte(hosts.String), &b.hostMax); err != nil {
			return nil, fmt.Errorf("read the hosts' max_jobs: %w", err)
		}
	}
	if live.Valid {
		var rows [][3]json.RawMessage
		if err := json.Unmarshal([]byte(live.String), &rows); err != nil {
			return nil, fmt.Errorf("read the counts of live jobs: %w", err)
		}
		for _, r := range rows {
			var q, h string
			var n int64
			if err := errors.Join(json.Unmarshal(r[0], &q), json.Unmarshal(r[1], &h), json.Unmarshal(r[2], &n)); err != nil {
				return nil, fmt.Errorf("read the counts of live jobs: %w", err)
			}
			b.live[[2]string{q, h}] += n
		}
	}
	return b, nil
}

// minionStateQuery reads whether the minion $1 is retired and whether
// it has a live job.
const minionStateQuery = `SELECT COALESCE((SELECT retire FROM minions WHERE name = $1), 0),
	EXISTS (SELECT 1 FROM jobs WHERE minion = $1 AND ` + liveStatus + `)`

// minionState reads whether minion m is retired and whether it has a
// live job.
func (tx *Tx) minionState(ctx context.Context, m MinionID) (retired, owns bool, err error) {
	var retire int64
	err = tx.queryRow(ctx, minionStateQuery, m.Name).Scan(&retire, &owns)
	if err != nil {
		return false, false, fmt.Errorf("read minion %s: %w", m.Name, err)
	}
	return retire != retireNo, owns, nil
}

// holdReports has a hand-out whose minion owns a live job
// wait for the job reports under way, and keep the next ones waiting
// until it commits, before it writes anything of that minion or its
// job: it takes the report lock (pgReportLock) after the write lock it
// holds, the order of every write transaction (pgBeginWrite). A report
// ending a job writes its lorry, then the job, then its minion; the
// hand-out of a minion that asks while it owns a live job (asking again,
// come back with a new pid, or another process under its name) writes
// the same rows, the job it ends first. Side by side, each would wait for
// a row the other wrote, in a transaction of several calls, and the
// server would break the cycle by failing one of them. Other hand-outs
// write nothing a report writes, and run beside the reports.
func (pgDriver) holdReports(ctx context.Context, tx *Tx) error {
	if _, err := tx.exec(ctx, `SELECT pg_advisory_xact_lock(`+pgReportLock+`)`); err != nil {
		return fmt.Errorf("wait for the job reports: %w", err)
	}
	return nil
}

// claimDue claims with claimFirst; when nothing is claimed for want of
// a due entry, idleAfterClaims says why.
func (d pgDriver) claimDue(ctx context.Context, tx *Tx, m MinionID, q openSet) (Assignment, bool, error) {
	a, touched, err := tx.claimFirst(ctx, m, q)
	if err == nil && a.Idle != "" && a.Idle != idleNotFree {
		a.Idle, err = d.idleAfterClaims(ctx, tx, a.Idle)
	}
	return a, touched, err
}

// claimFirst finds, on PostgreSQL, the entry to hand minion m from the
// open queues of q, as pickLorry does on SQLite, and claims it as
// claimLorry does, recording the minion with its job as touchMinion does
// (touched), all in one statement. The choices of the queues found
// earlier in the transaction are given to it (pgHandOut.heads), and only
// the others are looked for. When none is due, Idle says so; when the
// minion is retired or has a live job, nothing is written, and Idle is
// idleNotFree.
func (tx *Tx) claimFirst(ctx context.Context, m MinionID, q openSet) (a Assignment, touched bool, err error) {
	if tx.handOut == nil {
		return Assignment{}, false, errors.New("a claim before the hand-out's state was read")
	}
	heads := tx.handOut.heads[q.kind]
	if heads == nil {
		heads = map[string]sql.NullInt64{}
		tx.handOut.heads[q.kind] = heads
	}
	for try := 0; ; try++ {
		ask, known := map[string]string{}, map[string]int64{}
		for name, sort := range q.open {
			h, ok := heads[name]
			switch {
			case !ok:
				ask[name] = sort
			case h.Valid:
				known[name] = h.Int64
			}
		}
		if len(ask) == 0 && len(known) == 0 {
			return Assignment{Idle: q.noneDue()}, false, nil
		}
		knownJSON, err := json.Marshal(known)
		if err != nil {
			return Assignment{}, false, err
		}
		query, args := pgClaimFirstQuery, []any{tx.Now, askJSON(ask), string(knownJSON), m.Name, m.Host, m.PID}
		if q.kind != "" {
			query, args = pgClaimFirstOfKindQuery, append(args, q.kind)
		}
		var job sql.NullInt64
		var marked int64
		var free bool
		var found sql.NullString
		row := tx.queryRow(ctx, query, args...)
		l, err := scanLorry(scanAlso{row, []any{&job, &marked, &free, &found}})
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return Assignment{}, false, fmt.Errorf("claim a due lorry: %w", err)
		}
		claimable := err == nil && job.Valid && marked == 1 && q.due(l, tx.Now)
		if err == nil && !free {
			return Assignment{Idle: idleNotFree}, false, readHeads(found.String, heads)
		}
		if !claimable && len(known) > 0 && try == 0 {
			// A choice kept that no longer holds would be a claim the
			// kept choices missed: find every choice again.
			clear(heads)
			continue
		}
		if errors.Is(err, sql.ErrNoRows) {
			// Neither the queues asked nor those known have anything due.
			for name := range ask {
				heads[name] = sql.NullInt64{}
			}
			return Assignment{Idle: q.noneDue()}, false, nil
		}
		if !claimable {
			return Assignment{}, false, fmt.Errorf("the entry %q chosen for a hand-out is not due: %w", l.Path, ErrTaken)
		}
		if err := readHeads(found.String, heads); err != nil {
			return Assignment{}, false, err
		}
		// The queue's choice moves on, for a minion of any kind.
		for _, kept := range tx.handOut.heads {
			delete(kept, l.Queue)
		}
		tx.handOut.live[[2]string{l.Queue, m.Host}]++
		tx.handOut.claimed = true
		return claimed(m, l, job.Int64, tx.Now), true, nil
	}
}

// idleAfterClaims is why a hand-out found nothing to claim: idle, unless the transaction's claims since it read whether anything
// was due (pgHandOut.anyDue) took the last due entries. Then, as a
// hand-out alone would, it says that no lorry is due, and the hand-outs
// after it in the transaction say so at once.
func (pgDriver) idleAfterClaims(ctx context.Context, tx *Tx, idle string) (string, error) {
	b := tx.handOut
	if b == nil || !b.claimed {
		return idle, nil
	}
	var due sql.NullBool
	if err := tx.queryRow(ctx, pgAnyDueQuery, tx.Now).Scan(&due); err != nil {
		return "", fmt.Errorf("find whether anything is due: %w", err)
	}
	b.anyDue, b.claimed = due.Valid && due.Bool, false
	if !b.anyDue {
		return idleNoneDue, nil
	}
	return idle, nil
}

// readHeads adds to heads the choices of the queues as the claim found
// them: a JSON array of [queue, position or null], or "" for none.
func readHeads(text string, heads map[string]sql.NullInt64) error {
	if text == "" {
		return nil
	}
	var rows [][2]json.RawMessage
	if err := json.Unmarshal([]byte(text), &rows); err != nil {
		return fmt.Errorf("read the queues' choices: %w", err)
	}
	for _, r := range rows {
		var name string
		var pos *int64
		if err := errors.Join(json.Unmarshal(r[0], &name), json.Unmarshal(r[1], &pos)); err != nil {
			return fmt.Errorf("read the queues' choices: %w", err)
		}
		h := sql.NullInt64{}
		if pos != nil {
			h = sql.NullInt64{Int64: *pos, Valid: true}
		}
		heads[name] = h
	}
	return nil
}

// pgClaimFirstQuery finds the choice of each queue asked ($2, a JSON
// object of queue name to sort order, as pick.go's headsQuery does on
// SQLite), takes the entry first in the run queue of them and of the
// choices known ($3, a JSON object of queue to position), and claims it
// as insertClaimedJob, markRunning and touchMinion do, in one statement,
// for the minion named $4 on host $5 with pid $6, at $1.
// pgClaimFirstOfKindQuery does the same for entries of the kind $7.
// Nothing is written for a minion that is retired or has a live job. The
// answer is the entry as it was read, the new job's id, 1 if the entry
// was marked running, whether the minion was free, and the choices
// found, as [queue, position]; no row if nothing is due.
const (
	pgClaimFirstQuery = `WITH found (key, pos) AS (` + pgHeadsQuery + `),
	` + pgClaimHead
	pgClaimFirstOfKindQuery = `WITH found (key, pos) AS (SELECT j.key, CASE
			WHEN j.value = 'fifo' THEN (SELECT queue_pos FROM lorries
				WHERE queue = j.key AND kind = $7 AND running_job IS NULL AND next_due <= $1
				ORDER BY next_due, queue_pos LIMIT 1)
			WHEN j.value = 'lifo' THEN (SELECT queue_pos FROM lorries
				WHERE queue = j.key AND kind = $7 AND running_job IS NULL AND next_due <= $1
				ORDER BY next_due DESC, queue_pos DESC LIMIT 1)
			WHEN (SELECT MIN(next_due) FROM lorries
				WHERE queue = j.key AND kind = $7 AND running_job IS NULL) <= $1
			THEN (SELECT queue_pos FROM lorries
				WHERE queue = j.key AND kind = $7 AND running_job IS NULL AND (schedule = '' OR next_due != cron_next)
					AND next_due <= $1
				ORDER BY queue_pos LIMIT 1)
			END
		FROM jsonb_each_text(CAST($2 AS jsonb)) AS j),
	` + pgClaimHead
	// pgClaimHead is the rest of both, after the choices found.
	pgClaimHead = `head AS (SELECT ` + lorryColumns + ` FROM lorries WHERE queue_pos = (SELECT MIN(pos) FROM
			(SELECT found.pos FROM found
			UNION ALL SELECT CAST(k.value AS BIGINT) FROM jsonb_each_text(CAST($3 AS jsonb)) AS k) AS h (pos))),
		free AS (SELECT 1 WHERE COALESCE((SELECT retire FROM minions WHERE name = $4), 0) = 0
			AND NOT EXISTS (SELECT 1 FROM jobs WHERE minion = $4 AND ` + liveStatus + `)),
		job AS (INSERT INTO jobs (path, kind, minion, host, pid, started, updated, status, timeout,
				text, commit_id, runtime_name, runtime_version, runtime_id, runtime_python, queue)
			SELECT path, kind, $4, $5, $6, $1, $1, 'claimed', lorry_timeout,
				CASE WHEN commit_id != '' THEN text ELSE '' END, commit_id,
				runtime_name, runtime_version, runtime_id, runtime_python, queue
			FROM head, free WHERE running_job IS NULL AND next_due <= $1 RETURNING id),
		marked AS (UPDATE lorries SET running_job = (SELECT id FROM job),
				queue_pos = (SELECT MAX(queue_pos) + 1 FROM lorries)
			WHERE path = (SELECT path FROM head) AND running_job IS NULL AND EXISTS (SELECT 1 FROM job)
			RETURNING 1),
		touched AS (INSERT INTO minions (name, host, pid, last_seen, job_id)
			SELECT $4, $5, $6, $1, id FROM job` + minionSeen + `)
	SELECT head.*, (SELECT id FROM job), (SELECT COUNT(*) FROM marked), EXISTS (SELECT 1 FROM free),
		(SELECT json_agg(json_build_array(found.key, found.pos)) FROM found)
	FROM head`
)
