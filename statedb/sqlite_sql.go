package statedb

// sqliteSQL is the SQLite driver's own statements.
var sqliteSQL = dialectSQL{
	freeOrphanedLorry: `UPDATE lorries SET running_job = NULL,
			next_due = CASE WHEN schedule != '' THEN MIN($1, cron_handled) ELSE $1 END
		WHERE path = $2 AND running_job = $3`,
}
