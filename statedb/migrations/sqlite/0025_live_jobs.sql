-- The live (claimed or running) jobs counted by queue and host, kept by
-- triggers on jobs, so that a hand-out reads its limits' counts from a
-- few rows rather than from the jobs themselves. A row whose count is 0
-- stays, to be counted up again.
CREATE TABLE live_jobs (
	queue TEXT NOT NULL,
	host  TEXT NOT NULL,
	n     INTEGER NOT NULL,
	PRIMARY KEY (queue, host)
) WITHOUT ROWID;

INSERT INTO live_jobs (queue, host, n)
	SELECT queue, host, COUNT(*) FROM jobs WHERE status IN ('claimed', 'running') GROUP BY queue, host;

CREATE TRIGGER jobs_live_insert AFTER INSERT ON jobs
WHEN new.status IN ('claimed', 'running') BEGIN
	INSERT INTO live_jobs (queue, host, n) VALUES (new.queue, new.host, 1)
		ON CONFLICT (queue, host) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER jobs_live_update AFTER UPDATE OF status, queue, host ON jobs
WHEN (old.status IN ('claimed', 'running')) != (new.status IN ('claimed', 'running'))
	OR (new.status IN ('claimed', 'running') AND (old.queue != new.queue OR old.host != new.host)) BEGIN
	UPDATE live_jobs SET n = n - 1
		WHERE old.status IN ('claimed', 'running') AND queue = old.queue AND host = old.host;
	INSERT INTO live_jobs (queue, host, n) SELECT new.queue, new.host, 1
		WHERE new.status IN ('claimed', 'running')
		ON CONFLICT (queue, host) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER jobs_live_delete AFTER DELETE ON jobs
WHEN old.status IN ('claimed', 'running') BEGIN
	UPDATE live_jobs SET n = n - 1 WHERE queue = old.queue AND host = old.host;
END;
