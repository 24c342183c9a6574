package statedb

// postgresSQL is the PostgreSQL driver's own statements. (Neither value
// in LEAST can be NULL: cron_handled is NOT NULL.)
var postgresSQL = dialectSQL{
	freeOrphanedLorry: `UPDATE lorries SET running_job = NULL,
			next_due = CASE WHEN schedule != '' THEN LEAST($1, cron_handled) ELSE $1 END
		WHERE path = $2 AND running_job = $3`,
}
