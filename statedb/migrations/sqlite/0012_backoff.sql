-- Failure backoff and hard-fail.
--
-- Each entry keeps its own max-backoff and hard-fail-after, as its section
-- gave them, and its failure streak: consecutive_failures counts the
-- failed runs since the last success, state says what they led to (ok,
-- failing, backing-off, hard-failed), and backoff_until is when the
-- backoff lets it run again. A hard-failed entry's next_due is far in the
-- future, so that the partial indexes on next_due keep answering "is
-- anything due?" without looking at it.
ALTER TABLE lorries ADD COLUMN max_backoff INTEGER NOT NULL DEFAULT 86400;
ALTER TABLE lorries ADD COLUMN hard_fail_after INTEGER NOT NULL DEFAULT 14;
ALTER TABLE lorries ADD COLUMN consecutive_failures INTEGER NOT NULL DEFAULT 0;
ALTER TABLE lorries ADD COLUMN last_success INTEGER;
ALTER TABLE lorries ADD COLUMN state TEXT NOT NULL DEFAULT 'ok';
ALTER TABLE lorries ADD COLUMN backoff_until INTEGER NOT NULL DEFAULT 0;
ALTER TABLE lorries ADD COLUMN last_error_class TEXT NOT NULL DEFAULT '';
-- An entry that failed before this schema counts as failing once.
UPDATE lorries SET consecutive_failures = 1, state = 'failing'
	WHERE last_run_exit != 0 OR last_run_error != '';

-- A job's error class, and the state its end left its lorry in, so that
-- a lorry's history shows where a backoff or a hard-fail began.
ALTER TABLE jobs ADD COLUMN error_class TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN lorry_state TEXT NOT NULL DEFAULT '';

