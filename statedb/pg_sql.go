package statedb

// postgresSQL is PostgreSQL's own statements (dialectSQL).
//
// LEAST and GREATEST skip NULLs where SQLite's MIN and MAX of several
// values are NULL; every value they are given here is a NOT NULL column
// or an int64 argument, never NULL, so they give SQLite's answer.
var postgresSQL = dialectSQL{
	aheadSchedules: `SELECT ` + scheduledColumns + `
		FROM lorries
		WHERE schedule != '' AND path > $1 AND cron_handled > $2 ORDER BY path LIMIT $3`,
	claimDeliveries: `UPDATE outbox SET claimed_by = $1, claimed_until = $2
		WHERE id IN (SELECT id FROM outbox
			WHERE status = 'pending' AND next_try <= $3 AND (claimed_until <= $3 OR claimed_by = $1)
			ORDER BY next_try, id LIMIT $4)
		RETURNING ` + deliveryColumns,
	countFailing:  pgCountFailing,
	countLorries:  `SELECT ` + countTotalAndDue + `, (` + pgCountFailing + `), ` + countRunning,
	countMatching: `SELECT COUNT(*) FROM lorries WHERE ` + pgLorryFilter,
	dueDeliveries: `SELECT ` + deliveryColumns + ` FROM outbox
		WHERE status = 'pending' AND next_try <= $1 ORDER BY next_try, id LIMIT $2`,
	dueSchedules: `SELECT ` + scheduledColumns + `
		FROM lorries WHERE schedule != '' AND cron_next <= $1 ORDER BY cron_next LIMIT $2`,
	failingLorries: `SELECT ` + lorryColumns + ` FROM lorries
		WHERE last_run_exit != 0 OR last_run_error != '' ORDER BY queue_pos LIMIT $1 OFFSET $2`,
	freeOrphanedLorry: `UPDATE lorries SET running_job = NULL,
			next_due = CASE WHEN schedule != '' THEN LEAST($1, cron_handled) ELSE $1 END
		WHERE path = $2 AND running_job = $3`,
	heads:       pgHeadsQuery,
	headsOfKind: pgHeadsOfKindQuery,
	jobsAfter: `SELECT ` + jobColumns + ` FROM jobs
		WHERE ` + pgJobFilter + ` AND id > $4 ORDER BY id LIMIT $5`,
	jobsBefore: `SELECT ` + jobColumns + ` FROM jobs
		WHERE ` + pgJobFilter + ` AND id < $4 ORDER BY id DESC LIMIT $5`,
	jobsNewer: `SELECT 1 FROM jobs WHERE ` + pgJobFilter + ` AND id > $4 LIMIT 1`,
	jobsOlder: `SELECT 1 FROM jobs WHERE ` + pgJobFilter + ` AND id < $4 LIMIT 1`,
	jobsPerHour: `SELECT (ended - $1) / 3600, status, COUNT(*) FROM jobs
		WHERE ended >= $1 AND ended < $2 GROUP BY 1, 2`,
	lastJobID: pgLastJobIDQuery,
	lorriesAfter: `SELECT ` + lorryColumns + ` FROM lorries
		WHERE queue_pos > $1 ORDER BY queue_pos LIMIT $2`,
	lorriesByUpstream: `SELECT path FROM lorries
		WHERE upstream_url != '' AND upstream_url IN (SELECT value FROM jsonb_array_elements_text($1::jsonb))
		ORDER BY queue_pos`,
	lorryPage: `SELECT ` + lorryColumns + ` FROM lorries
		WHERE ` + pgLorryFilter + ` ORDER BY queue_pos LIMIT $6 OFFSET $7`,
	lorryPageFiltered: `SELECT ` + lorryColumns + ` FROM lorries
		WHERE ` + pgLorryFilter + ` ORDER BY queue_pos LIMIT $6 OFFSET $7`,
	makeDueNow: `UPDATE lorries SET run_again = 0,
			next_due = CASE WHEN state = $3 THEN next_due
				WHEN schedule != '' THEN LEAST(next_due, $1, cron_handled) ELSE LEAST(next_due, $1) END,
			queue_pos = CASE WHEN state = $3 THEN queue_pos ELSE (SELECT MIN(queue_pos) - 1 FROM lorries) END
		WHERE path = $2 AND running_job IS NULL`,
	moveHostsOfRemovedQueues: `UPDATE hosts SET queue = $1
		WHERE queue NOT IN (SELECT value FROM jsonb_array_elements_text($2::jsonb))`,
	moveLorriesOfRemovedQueues: `UPDATE lorries SET queue = $1
		WHERE queue NOT IN (SELECT value FROM jsonb_array_elements_text($2::jsonb))`,
	orphanedJobs: `SELECT ` + jobColumns + ` FROM jobs
		WHERE status = 'claimed' AND started < $1 ORDER BY id`,
	queuesDue: `SELECT q.name, d.n, d.oldest FROM jsonb_array_elements_text($1::jsonb) AS q(name)
			CROSS JOIN LATERAL (SELECT COUNT(*) AS n, MIN(next_due) AS oldest FROM lorries
				WHERE queue = q.name AND running_job IS NULL AND next_due <= $2) AS d`,
	queuePosition: `SELECT (SELECT COALESCE(SUM(n), 0) FROM lorry_buckets WHERE bucket < l.queue_pos >> 14)
			+ (SELECT COUNT(*) FROM lorries
				WHERE queue_pos BETWEEN (l.queue_pos >> 14) << 14 AND l.queue_pos)
		FROM lorries AS l WHERE l.path = $1`,
	seeConfigLorries:    `INSERT INTO config_seen (path) SELECT value FROM jsonb_array_elements_text($1::jsonb)`,
	seenTwice:           `SELECT value FROM jsonb_array_elements_text($1::jsonb) WHERE value IN (SELECT path FROM config_seen) LIMIT 1`,
	serverNow:           `SELECT EXTRACT(EPOCH FROM clock_timestamp())::float8`,
	setSchedule:         `UPDATE lorries SET next_due = CASE WHEN $1 = '' THEN (CASE WHEN last_run IS NULL THEN LEAST(next_due, $3) ELSE last_run + interval END)` + setScheduleRest,
	storedConfigLorries: storedConfigColumns + ` FROM lorries WHERE path IN (SELECT value FROM jsonb_array_elements_text($1::jsonb))`,
	tickSchedule: `UPDATE lorries SET
			next_due = CASE
				WHEN running_job IS NOT NULL OR state = 'hard-failed' THEN next_due
				WHEN $1 != 0 THEN GREATEST(LEAST(next_due, $2), backoff_until)
				WHEN next_due > cron_handled THEN GREATEST($3, backoff_until)
				ELSE next_due END,
			cron_wall = $4, cron_mono = $5, cron_boot = $6, cron_handled = $7, cron_next = $3
		WHERE path = $8 AND schedule = $9`,
	unqueuedConfigLorries: `UPDATE lorries SET queue = $1 WHERE generated = 0 AND queue != $2
		AND path NOT IN (SELECT value FROM jsonb_array_elements_text($3::jsonb))`,
	unstageLorries:    `DELETE FROM config_staged WHERE path IN (SELECT value FROM jsonb_array_elements_text($1::jsonb))`,
	updateConfigLorry: updateConfigLorryHead + `next_due = CASE WHEN schedule != '' THEN LEAST(next_due, cron_next) WHEN last_run IS NULL THEN next_due ELSE last_run + $6 END,` + updateConfigLorryRest,
}

// pgJobFilter and pgLorryFilter are the conditions of a JobFilter and a
// LorryFilter. A path matches as SQLite's LIKE matches it: ASCII letters
// of either case, and no other letter of another case (ILIKE would fold
// every letter of Unicode).
const (
	pgJobFilter   = jobFilterStatus + ` AND ($2 = '' OR translate(path, ` + pgFoldASCII + `) LIKE translate($3, ` + pgFoldASCII + `) ESCAPE '\')`
	pgLorryFilter = `($1 = '' OR translate(path, ` + pgFoldASCII + `) LIKE translate($2, ` + pgFoldASCII + `) ESCAPE '\') AND ` + lorryFilterState
	// pgFoldASCII are translate's arguments that make ASCII letters
	// lower case.
	pgFoldASCII = `'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz'`
)

// pgHeadsQuery is headsQuery in PostgreSQL's dialect, and
// pgHeadsOfKindQuery headsOfKindQuery.
const (
	pgHeadsQuery = `SELECT j.key, CASE
		WHEN j.value = 'fifo' THEN (SELECT queue_pos FROM lorries
			WHERE queue = j.key AND running_job IS NULL AND next_due <= $1
			ORDER BY next_due, queue_pos LIMIT 1)
		WHEN j.value = 'lifo' THEN (SELECT queue_pos FROM lorries
			WHERE queue = j.key AND running_job IS NULL AND next_due <= $1
			ORDER BY next_due DESC, queue_pos DESC LIMIT 1)
		WHEN (SELECT MIN(next_due) FROM lorries
			WHERE queue = j.key AND running_job IS NULL) <= $1
		THEN (SELECT queue_pos FROM lorries
			WHERE queue = j.key AND running_job IS NULL AND (schedule = '' OR next_due != cron_next)
				AND next_due <= $1
			ORDER BY queue_pos LIMIT 1)
		END
	FROM jsonb_each_text($2::jsonb) AS j`
	pgHeadsOfKindQuery = `SELECT j.key, CASE
		WHEN j.value = 'fifo' THEN (SELECT queue_pos FROM lorries
			WHERE queue = j.key AND kind = $3 AND running_job IS NULL AND next_due <= $1
			ORDER BY next_due, queue_pos LIMIT 1)
		WHEN j.value = 'lifo' THEN (SELECT queue_pos FROM lorries
			WHERE queue = j.key AND kind = $3 AND running_job IS NULL AND next_due <= $1
			ORDER BY next_due DESC, queue_pos DESC LIMIT 1)
		WHEN (SELECT MIN(next_due) FROM lorries
			WHERE queue = j.key AND kind = $3 AND running_job IS NULL) <= $1
		THEN (SELECT queue_pos FROM lorries
			WHERE queue = j.key AND kind = $3 AND running_job IS NULL AND (schedule = '' OR next_due != cron_next)
				AND next_due <= $1
			ORDER BY queue_pos LIMIT 1)
		END
	FROM jsonb_each_text($2::jsonb) AS j`
)

// pgLastJobIDQuery reads the last id the jobs' identity sequence gave. A
// sequence set with setval(…, false), as migrate-statedb sets it, has
// given the id before the one it holds.
const pgLastJobIDQuery = `SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END FROM jobs_id_seq`

// pgCountFailing counts the failing lorries: see CountLorries.
const pgCountFailing = `SELECT COUNT(*) FROM lorries
		WHERE last_run_exit != 0 OR last_run_error != ''`
