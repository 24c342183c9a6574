-- The outbox of notifications: each row is one event to POST to the
-- notification URL, written in the transaction that made the event, so
-- that an event is never lost nor sent for a change that was rolled back.
-- A background loop delivers the pending rows and records the answers.
-- AUTOINCREMENT keeps ids from being reused once old rows are removed:
-- receivers tell deliveries apart by them.
CREATE TABLE outbox (
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	event      TEXT NOT NULL,
	payload    TEXT NOT NULL,
	created    INTEGER NOT NULL,
	status     TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
	attempts   INTEGER NOT NULL DEFAULT 0,
	next_try   INTEGER NOT NULL,
	last_try   INTEGER,
	last_code  INTEGER,
	last_error TEXT NOT NULL DEFAULT ''
);
-- The loop asks "what is due?" every few seconds: only pending rows are
-- indexed, so the question costs the same however many were delivered.
CREATE INDEX outbox_due ON outbox (next_try) WHERE status = 'pending';
