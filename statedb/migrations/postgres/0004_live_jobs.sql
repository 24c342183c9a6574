-- The live (claimed or running) jobs counted by queue and host, kept by
-- a trigger on jobs, so that a hand-out reads its limits' counts from a
-- few rows rather than from the jobs themselves: a partial index of the
-- live jobs keeps an entry for every job that ended since the table was
-- last vacuumed, and counting through them took half a millisecond a
-- hand-out. A count is updated in place (no index holds it), which
-- PostgreSQL does without a new index entry. A row whose count is 0
-- stays, to be counted up again.
CREATE TABLE live_jobs (
	queue TEXT COLLATE "C" NOT NULL,
	host  TEXT COLLATE "C" NOT NULL,
	n     BIGINT NOT NULL,
	PRIMARY KEY (queue, host)
);

INSERT INTO live_jobs (queue, host, n)
	SELECT queue, host, COUNT(*) FROM jobs WHERE status IN ('claimed', 'running') GROUP BY queue, host;

CREATE FUNCTION lc_count_live_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	was_live boolean := TG_OP <> 'INSERT' AND OLD.status IN ('claimed', 'running');
	is_live  boolean := TG_OP <> 'DELETE' AND NEW.status IN ('claimed', 'running');
BEGIN
	IF was_live AND is_live AND OLD.queue = NEW.queue AND OLD.host = NEW.host THEN
		RETURN NULL;
	END IF;
	IF was_live THEN
		UPDATE live_jobs SET n = n - 1 WHERE queue = OLD.queue AND host = OLD.host;
	END IF;
	IF is_live THEN
		INSERT INTO live_jobs (queue, host, n) VALUES (NEW.queue, NEW.host, 1)
			ON CONFLICT (queue, host) DO UPDATE SET n = live_jobs.n + 1;
	END IF;
	RETURN NULL;
END
$$;

CREATE TRIGGER jobs_live_count AFTER INSERT OR DELETE OR UPDATE OF status, queue, host ON jobs
	FOR EACH ROW EXECUTE FUNCTION lc_count_live_jobs();
