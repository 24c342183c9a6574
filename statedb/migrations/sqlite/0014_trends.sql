-- Trends for the pages: jobs by the hour they ended, read from an index
-- that covers the query, and a small time series of each queue's oldest
-- due entry, sampled by the WEBAPP's scheduler.

CREATE INDEX jobs_ended ON jobs (ended, status);

CREATE TABLE queue_samples (
	at          INTEGER NOT NULL,
	queue       TEXT NOT NULL,
	due         INTEGER NOT NULL,
	oldest_wait INTEGER, -- seconds the oldest due entry had waited; NULL when none was due
	PRIMARY KEY (at, queue)
) WITHOUT ROWID;
