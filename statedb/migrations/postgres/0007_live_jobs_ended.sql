-- Job reports run beside the hand-outs, under a lock of their own (see
-- pgBeginReports): a job's end must not update the row of live_jobs that
-- the hand-outs count up, or each report would wait for the hand-outs'
-- transaction to end, and the other way round. An end adds a row to
-- live_jobs_ended instead; the hand-outs, under the write lock, take
-- those rows off their counts at the start of each transaction
-- (pgFoldEnded). Until then the counts read through live_counts subtract
-- them. A count read while a report's transaction runs is too high,
-- never too low: the job's slot is free once the report commits.
CREATE TABLE live_jobs_ended (
	queue TEXT COLLATE "C" NOT NULL,
	host  TEXT COLLATE "C" NOT NULL
);

CREATE OR REPLACE FUNCTION lc_count_live_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	was_live boolean := TG_OP <> 'INSERT' AND OLD.status IN ('claimed', 'running');
	is_live  boolean := TG_OP <> 'DELETE' AND NEW.status IN ('claimed', 'running');
BEGIN
	IF was_live AND is_live AND OLD.queue = NEW.queue AND OLD.host = NEW.host THEN
		RETURN NULL;
	END IF;
	IF was_live THEN
		INSERT INTO live_jobs_ended (queue, host) VALUES (OLD.queue, OLD.host);
	END IF;
	IF is_live THEN
		INSERT INTO live_jobs (queue, host, n) VALUES (NEW.queue, NEW.host, 1)
			ON CONFLICT (queue, host) DO UPDATE SET n = live_jobs.n + 1;
	END IF;
	RETURN NULL;
END
$$;

CREATE VIEW live_counts AS
	SELECT l.queue, l.host, l.n - COALESCE(e.n, 0) AS n
	FROM live_jobs l LEFT JOIN (SELECT queue, host, COUNT(*) AS n FROM live_jobs_ended GROUP BY queue, host) e
		ON e.queue = l.queue AND e.host = l.host;
