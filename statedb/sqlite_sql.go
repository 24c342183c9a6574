package statedb

// sqliteSQL is SQLite's own statements (dialectSQL). The query-planner
// hints keep each read on the index that answers it at a million
// lorries, where SQLite's planner would choose another.
var sqliteSQL = dialectSQL{
	aheadSchedules: `SELECT ` + scheduledColumns + `
		FROM lorries INDEXED BY lorries_scheduled
		WHERE schedule != '' AND path > $1 AND cron_handled > $2 ORDER BY path LIMIT $3`,
	claimDeliveries: `UPDATE outbox SET claimed_by = $1, claimed_until = $2
		WHERE id IN (SELECT id FROM outbox INDEXED BY outbox_due
			WHERE status = 'pending' AND next_try <= $3 AND (claimed_until <= $3 OR claimed_by = $1)
			ORDER BY next_try, id LIMIT $4)
		RETURNING ` + deliveryColumns,
	countFailing:  sqliteCountFailing,
	countLorries:  `SELECT ` + countTotalAndDue + `, (` + sqliteCountFailing + `), ` + countRunning,
	countMatching: `SELECT COUNT(*) FROM lorries WHERE ` + sqliteLorryFilter,
	dueDeliveries: `SELECT ` + deliveryColumns + ` FROM outbox INDEXED BY outbox_due
		WHERE status = 'pending' AND next_try <= $1 ORDER BY next_try, id LIMIT $2`,
	dueSchedules: dueSchedulesQuery,
	failingLorries: `SELECT ` + lorryColumns + ` FROM lorries INDEXED BY lorries_failing
		WHERE last_run_exit != 0 OR last_run_error != '' ORDER BY queue_pos LIMIT $1 OFFSET $2`,
	freeOrphanedLorry: `UPDATE lorries SET running_job = NULL,
			next_due = CASE WHEN schedule != '' THEN MIN($1, cron_handled) ELSE $1 END
		WHERE path = $2 AND running_job = $3`,
	heads:       headsQuery,
	headsOfKind: headsOfKindQuery,
	jobsAfter: `SELECT ` + jobColumns + ` FROM jobs
		WHERE ` + sqliteJobFilter + ` AND id > $4 ORDER BY id LIMIT $5`,
	jobsBefore: `SELECT ` + jobColumns + ` FROM jobs
		WHERE ` + sqliteJobFilter + ` AND id < $4 ORDER BY id DESC LIMIT $5`,
	jobsNewer: `SELECT 1 FROM jobs WHERE ` + sqliteJobFilter + ` AND id > $4 LIMIT 1`,
	jobsOlder: `SELECT 1 FROM jobs WHERE ` + sqliteJobFilter + ` AND id < $4 LIMIT 1`,
	jobsPerHour: `SELECT (ended - $1) / 3600, status, COUNT(*) FROM jobs INDEXED BY jobs_ended
		WHERE ended >= $1 AND ended < $2 GROUP BY 1, 2`,
	lastJobID: `SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'jobs'), 0)`,
	lorriesAfter: `SELECT ` + lorryColumns + ` FROM lorries INDEXED BY lorries_queue
		WHERE queue_pos > $1 ORDER BY queue_pos LIMIT $2`,
	lorriesByUpstream: `SELECT path FROM lorries INDEXED BY lorries_upstream_url
		WHERE upstream_url != '' AND upstream_url IN (SELECT value FROM json_each($1))
		ORDER BY queue_pos`,
	// The whole queue is read in the order of its index, which stops at
	// the page. A filtered one is read whole and its matches sorted: the
	// index would fetch each of 100,000 rows in turn to test it.
	lorryPage: `SELECT ` + lorryColumns + ` FROM lorries INDEXED BY lorries_queue
		WHERE ` + sqliteLorryFilter + ` ORDER BY queue_pos LIMIT $6 OFFSET $7`,
	lorryPageFiltered: `SELECT ` + lorryColumns + ` FROM lorries NOT INDEXED
		WHERE ` + sqliteLorryFilter + ` ORDER BY queue_pos LIMIT $6 OFFSET $7`,
	makeDueNow: `UPDATE lorries SET run_again = 0,
			next_due = CASE WHEN state = $3 THEN next_due
				WHEN schedule != '' THEN MIN(next_due, $1, cron_handled) ELSE MIN(next_due, $1) END,
			queue_pos = CASE WHEN state = $3 THEN queue_pos ELSE (SELECT MIN(queue_pos) - 1 FROM lorries) END
		WHERE path = $2 AND running_job IS NULL`,
	moveHostsOfRemovedQueues: `UPDATE hosts SET queue = $1
		WHERE queue NOT IN (SELECT value FROM json_each($2))`,
	moveLorriesOfRemovedQueues: `UPDATE lorries SET queue = $1
		WHERE queue NOT IN (SELECT value FROM json_each($2))`,
	orphanedJobs: `SELECT ` + jobColumns + ` FROM jobs INDEXED BY jobs_claimed
		WHERE status = 'claimed' AND started < $1 ORDER BY id`,
	queuesDue: `SELECT q.value,
			(SELECT COUNT(*) FROM lorries INDEXED BY lorries_queue_due
				WHERE queue = q.value AND running_job IS NULL AND next_due <= $2),
			(SELECT MIN(next_due) FROM lorries INDEXED BY lorries_queue_due
				WHERE queue = q.value AND running_job IS NULL AND next_due <= $2)
		FROM json_each($1) AS q`,
	queuePosition: `SELECT (SELECT COALESCE(SUM(n), 0) FROM lorry_buckets WHERE bucket < l.queue_pos >> 14)
			+ (SELECT COUNT(*) FROM lorries INDEXED BY lorries_queue
				WHERE queue_pos BETWEEN (l.queue_pos >> 14) << 14 AND l.queue_pos)
		FROM lorries AS l WHERE l.path = $1`,
	seeConfigLorries:    `INSERT INTO config_seen (path) SELECT value FROM json_each($1)`,
	seenTwice:           `SELECT value FROM json_each($1) WHERE value IN (SELECT path FROM config_seen) LIMIT 1`,
	serverNow:           `SELECT (julianday('now') - 2440587.5) * 86400.0`,
	setSchedule:         `UPDATE lorries SET next_due = CASE WHEN $1 = '' THEN (CASE WHEN last_run IS NULL THEN MIN(next_due, $3) ELSE last_run + interval END)` + setScheduleRest,
	storedConfigLorries: storedConfigColumns + ` FROM lorries WHERE path IN (SELECT value FROM json_each($1))`,
	tickSchedule: `UPDATE lorries SET
			next_due = CASE
				WHEN running_job IS NOT NULL OR state = 'hard-failed' THEN next_due
				WHEN $1 != 0 THEN MAX(MIN(next_due, $2), backoff_until)
				WHEN next_due > cron_handled THEN MAX($3, backoff_until)
				ELSE next_due END,
			cron_wall = $4, cron_mono = $5, cron_boot = $6, cron_handled = $7, cron_next = $3
		WHERE path = $8 AND schedule = $9`,
	unqueuedConfigLorries: `UPDATE lorries SET queue = $1 WHERE generated = 0 AND queue != $2
		AND path NOT IN (SELECT value FROM json_each($3))`,
	unstageLorries:    `DELETE FROM config_staged WHERE path IN (SELECT value FROM json_each($1))`,
	updateConfigLorry: updateConfigLorryHead + `next_due = CASE WHEN schedule != '' THEN MIN(next_due, cron_next) WHEN last_run IS NULL THEN next_due ELSE last_run + $6 END,` + updateConfigLorryRest,
}

// sqliteJobFilter and sqliteLorryFilter are the conditions of a JobFilter
// and a LorryFilter: SQLite's LIKE matches ASCII letters of either case,
// as the filters promise, and only those.
const (
	sqliteJobFilter   = jobFilterStatus + ` AND ($2 = '' OR path LIKE $3 ESCAPE '\')`
	sqliteLorryFilter = `($1 = '' OR path LIKE $2 ESCAPE '\') AND ` + lorryFilterState
)

const dueSchedulesQuery = `SELECT ` + scheduledColumns + `
	FROM lorries INDEXED BY lorries_cron_next
	WHERE schedule != '' AND cron_next <= $1 ORDER BY cron_next LIMIT $2`

// headsQuery finds the choice of each queue of ?2 (a JSON object of queue
// name to sort order): the queue position of its first due entry by its
// sort order, NULL when none is due. Each branch walks one index of one
// queue from its first due entry. The probe keeps a queue-order queue with nothing
// due from being walked to its end; it sits inside the CASE, where it
// stays a subquery of its one queue: as a term of the WHERE clause SQLite
// turns it into a join, evaluating the CASE for every due entry of every
// queue, which took a second per hand-out with 100,000 due entries in 50
// queues. The queue-order walk passes over no entry waiting for its
// schedule's next event (next_due = cron_next): such an entry is handed
// out once a tick has fired it, which moves its next_due off cron_next.
// The probe is a scalar subquery, not an EXISTS, which PostgreSQL would
// answer by hashing every due entry of every queue when its statistics
// are behind a large change of the queue; and it asks for the earliest
// due time, which both databases read from the end of the index, rather
// than for any due entry, which PostgreSQL answers with a scan of the
// table when it guesses that many are due.
const headsQuery = `SELECT j.key, CASE
		WHEN j.value = 'fifo' THEN (SELECT queue_pos FROM lorries INDEXED BY lorries_queue_due
			WHERE queue = j.key AND running_job IS NULL AND next_due <= $1
			ORDER BY next_due, queue_pos LIMIT 1)
		WHEN j.value = 'lifo' THEN (SELECT queue_pos FROM lorries INDEXED BY lorries_queue_due
			WHERE queue = j.key AND running_job IS NULL AND next_due <= $1
			ORDER BY next_due DESC, queue_pos DESC LIMIT 1)
		WHEN (SELECT MIN(next_due) FROM lorries INDEXED BY lorries_queue_due
			WHERE queue = j.key AND running_job IS NULL) <= $1
		THEN (SELECT queue_pos FROM lorries INDEXED BY lorries_queue_order
			WHERE queue = j.key AND running_job IS NULL AND (schedule = '' OR next_due != cron_next)
				AND next_due <= $1
			ORDER BY queue_pos LIMIT 1)
		END
	FROM json_each($2) AS j`

// headsOfKindQuery is headsQuery with each queue's entries narrowed to the
// kind $3.
const headsOfKindQuery = `SELECT j.key, CASE
		WHEN j.value = 'fifo' THEN (SELECT queue_pos FROM lorries INDEXED BY lorries_queue_due
			WHERE queue = j.key AND kind = $3 AND running_job IS NULL AND next_due <= $1
			ORDER BY next_due, queue_pos LIMIT 1)
		WHEN j.value = 'lifo' THEN (SELECT queue_pos FROM lorries INDEXED BY lorries_queue_due
			WHERE queue = j.key AND kind = $3 AND running_job IS NULL AND next_due <= $1
			ORDER BY next_due DESC, queue_pos DESC LIMIT 1)
		WHEN (SELECT MIN(next_due) FROM lorries INDEXED BY lorries_queue_due
			WHERE queue = j.key AND kind = $3 AND running_job IS NULL) <= $1
		THEN (SELECT queue_pos FROM lorries INDEXED BY lorries_queue_order
			WHERE queue = j.key AND kind = $3 AND running_job IS NULL AND (schedule = '' OR next_due != cron_next)
				AND next_due <= $1
			ORDER BY queue_pos LIMIT 1)
		END
	FROM json_each($2) AS j`

// sqliteCountFailing counts the failing lorries: see CountLorries.
const sqliteCountFailing = `SELECT COUNT(*) FROM lorries INDEXED BY lorries_failing
		WHERE last_run_exit != 0 OR last_run_error != ''`
