package statedb

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
)

// On PostgreSQL each statement is a round trip: a report's progress, and
// a job's end with its lorry's run and its minion, are one statement
// each.

func (pgDriver) saveProgress(ctx context.Context, tx *Tx, j Job) error {
	res, err := tx.exec(ctx, pgProgressQuery, append(j.progressArgs(tx.Now), j.Minion)...)
	if err != nil {
		return fmt.Errorf("update job %d: %w", j.ID, err)
	}
	return taken(res, fmt.Sprintf("update job %d: it ended or changed meanwhile", j.ID))
}

// pgProgressQuery records the minion $15 heard at $1 and writes the
// progress of its live job (progressArgs).
const pgProgressQuery = `WITH heard AS (UPDATE minions SET last_seen = $1, heard = heard + 1 WHERE name = $15)
	UPDATE jobs SET updated = $1, kill = $2, kill_reason = $3, disk_usage = $4,
		output_bytes = $5, head_bytes = $6, tail_bytes = $7, cut_bytes = $8, next_chunk = $9, output_carry = $10,
		stdout_bytes = $13, stderr_bytes = $14
	WHERE id = $11 AND ` + liveStatus + ` AND updated = $12`

func (pgDriver) recordEnd(ctx context.Context, tx *Tx, j Job, e jobEnd, lorryState string) error {
	var ended int64
	err := tx.queryRow(ctx, pgEndQuery, append(endArgs(tx, j, e, lorryState), j.Minion, e.heard)...).Scan(&ended)
	if err != nil {
		return fmt.Errorf("end job %d: %w", j.ID, err)
	}
	if ended == 0 {
		return endTaken(j, e)
	}
	return nil
}

// pgEndQuery ends a job (endArgs) and, if it ended, frees its minion
// $17, recorded seen at the time if $18 is 1 (true: the minion reported the end).
// It answers how many jobs it ended.
const pgEndQuery = `WITH ended AS (UPDATE jobs SET status = $1, exit = $2, ended = $3, updated = $3, disk_usage = $4,
			output_bytes = $5, head_bytes = $6, tail_bytes = $7, cut_bytes = $8, next_chunk = $9, error_class = $10,
			output_carry = $11, lorry_state = $12, stdout_bytes = $15, stderr_bytes = $16
		WHERE id = $13 AND ` + liveStatus + ` AND updated = $14 RETURNING 1),
	freed AS (UPDATE minions SET job_id = NULL, last_seen = CASE WHEN $18 = 1 THEN $3 ELSE last_seen END
		WHERE name = $17 AND job_id = $13 AND EXISTS (SELECT 1 FROM ended))
	SELECT COUNT(*) FROM ended`

// endRun records the run, the end and the minion in one statement.
func (pgDriver) endRun(ctx context.Context, tx *Tx, l Lorry, j Job, e jobEnd, lastErr string) error {
	r, err := tx.planRun(ctx, l, j, e, lastErr)
	if err != nil {
		return err
	}
	args := append(endArgs(tx, j, e, r.s.state), j.Minion, e.heard)
	var again sql.NullBool
	var ended int64
	if err := tx.queryRow(ctx, pgRunEndQuery, append(args, r.args()...)...).Scan(&again, &ended); err != nil {
		return fmt.Errorf("end job %d: %w", j.ID, err)
	}
	if !again.Valid {
		return r.taken()
	}
	if ended == 0 {
		return endTaken(j, e)
	}
	if err := tx.notifyRun(ctx, r); err != nil {
		return err
	}
	if again.Bool {
		return tx.makeDueNow(ctx, j.Path)
	}
	return nil
}

// pgRunEndQuery is pgEndQuery with the lorry's run (recordRunQuery's
// arguments, lorryRun.args, from $19 on) written first: the job ends
// only if its lorry took the run. It answers the lorry's run_again
// (NULL if it did not) and how many jobs it ended.
const pgRunEndQuery = `WITH run AS (UPDATE lorries SET running_job = NULL, last_run = $19, next_due = $20,
			last_run_exit = $21, last_run_error = $22, disk_usage = COALESCE($23, disk_usage),
			consecutive_failures = $24, state = $25, backoff_until = $26, last_success = $27, last_error_class = $28,
			upstream_head = CASE WHEN $29 != '' THEN $29 ELSE upstream_head END
		WHERE path = $30 AND running_job = $31 AND consecutive_failures = $32 AND state = $33 RETURNING run_again),
	ended AS (UPDATE jobs SET status = $1, exit = $2, ended = $3, updated = $3, disk_usage = $4,
			output_bytes = $5, head_bytes = $6, tail_bytes = $7, cut_bytes = $8, next_chunk = $9, error_class = $10,
			output_carry = $11, lorry_state = $12, stdout_bytes = $15, stderr_bytes = $16
		WHERE id = $13 AND ` + liveStatus + ` AND updated = $14 AND EXISTS (SELECT 1 FROM run) RETURNING 1),
	freed AS (UPDATE minions SET job_id = NULL, last_seen = CASE WHEN $18 = 1 THEN $3 ELSE last_seen END
		WHERE name = $17 AND job_id = $13 AND EXISTS (SELECT 1 FROM ended))
	SELECT (SELECT run_again FROM run), (SELECT COUNT(*) FROM ended)`

// lastOutputLines reads the lines of all the jobs in one statement
// (pgLastChunksQuery): the status page shows the line of every running
// job, and a round trip or two for each of hundreds of them took most
// of the page's time under load. A job whose last chunks hold less than
// the kilobyte looked at, with more chunks before them, is read alone.
func (pgDriver) lastOutputLines(ctx context.Context, tx *Tx, ids []int64) (map[int64]string, error) {
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	rows, err := tx.query(ctx, pgLastChunksQuery, string(list), pgLastChunks)
	if err != nil {
		return nil, fmt.Errorf("read the jobs' output: %w", err)
	}
	defer rows.Close()
	lines := make(map[int64]string, len(ids))
	var short []int64
	for rows.Next() {
		var id, n int64
		var carry, data []byte
		if err := rows.Scan(&id, &carry, &n, &data); err != nil {
			return nil, fmt.Errorf("read the jobs' output: %w", err)
		}
		if n == pgLastChunks && len(data) < lastLineBytes {
			short = append(short, id)
			continue
		}
		lines[id] = lastLine(lastBytes(data, lastLineBytes), finishCR(carry))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the jobs' output: %w", err)
	}
	rows.Close()
	for _, id := range short {
		if lines[id], err = tx.LastOutputLine(ctx, id); err != nil {
			return nil, err
		}
	}
	return lines, nil
}

// pgLastChunksQuery reads, for each job of the JSON list $1, its line
// held back and the number and text of its last $2 chunks of output.
const pgLastChunksQuery = `SELECT j.id, j.output_carry, t.n, COALESCE(t.data, ''::bytea)
	FROM jsonb_array_elements_text($1::jsonb) AS i(id)
	JOIN jobs AS j ON j.id = i.id::bigint
	CROSS JOIN LATERAL (SELECT COUNT(*) AS n, string_agg(c.data, ''::bytea ORDER BY c.seq) AS data
		FROM (SELECT seq, data FROM job_output WHERE job_id = j.id ORDER BY seq DESC LIMIT $2) AS c) AS t`

// pgLastChunks is how many chunks of each job pgLastChunksQuery reads.
const pgLastChunks = 8
