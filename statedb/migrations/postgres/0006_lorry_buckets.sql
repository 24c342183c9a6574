-- The run queue's entries counted by ranges of 16,384 queue positions
-- (queue_pos >> 14), as on SQLite: the total is a sum of a few hundred
-- rows, and an entry's place in the run queue that sum below its range
-- and a count within the range, where counting the index walked up to a
-- million entries. An empty range has no row.
--
-- Entries added and removed are counted by statement triggers, which see
-- the rows a statement changed as a table: a row trigger would update one
-- range's row once for every entry of a configuration inserted in one
-- statement, and PostgreSQL keeps every version of a row updated again
-- and again in one transaction. An entry moved to another range (handed
-- out, or moved to the top or the bottom, one statement an entry) is
-- counted by a row trigger, which runs only when the range changes: a
-- statement trigger would run at every write of an entry, its state and
-- due time included, and cost the job cycle a third of its speed.
CREATE TABLE lorry_buckets (
	bucket BIGINT PRIMARY KEY,
	n      BIGINT NOT NULL
);
INSERT INTO lorry_buckets (bucket, n) SELECT queue_pos >> 14, COUNT(*) FROM lorries GROUP BY queue_pos >> 14;

-- lc_count_buckets adds d to the count of each range in the positions
-- given, and removes the ranges left empty.
CREATE FUNCTION lc_count_buckets(changes BIGINT[][]) RETURNS void LANGUAGE sql AS $$
	INSERT INTO lorry_buckets (bucket, n)
		SELECT changes[i][1], changes[i][2] FROM generate_subscripts(changes, 1) AS i
		ON CONFLICT (bucket) DO UPDATE SET n = lorry_buckets.n + excluded.n;
	DELETE FROM lorry_buckets WHERE n = 0 AND bucket = ANY (SELECT changes[i][1] FROM generate_subscripts(changes, 1) AS i);
$$;

CREATE FUNCTION lc_lorry_buckets() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	changes BIGINT[][];
BEGIN
	IF TG_OP = 'INSERT' THEN
		SELECT array_agg(ARRAY[b, d]) INTO changes FROM
			(SELECT queue_pos >> 14 AS b, COUNT(*) AS d FROM new_rows GROUP BY 1) AS x;
	ELSE
		SELECT array_agg(ARRAY[b, -d]) INTO changes FROM
			(SELECT queue_pos >> 14 AS b, COUNT(*) AS d FROM old_rows GROUP BY 1) AS x;
	END IF;
	IF changes IS NOT NULL THEN
		PERFORM lc_count_buckets(changes);
	END IF;
	RETURN NULL;
END
$$;

CREATE FUNCTION lc_lorry_bucket_move() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	left_in_old BIGINT;
BEGIN
	UPDATE lorry_buckets SET n = n - 1 WHERE bucket = OLD.queue_pos >> 14 RETURNING n INTO left_in_old;
	IF left_in_old = 0 THEN
		DELETE FROM lorry_buckets WHERE bucket = OLD.queue_pos >> 14;
	END IF;
	INSERT INTO lorry_buckets (bucket, n) VALUES (NEW.queue_pos >> 14, 1)
		ON CONFLICT (bucket) DO UPDATE SET n = lorry_buckets.n + 1;
	RETURN NULL;
END
$$;

CREATE TRIGGER lorry_buckets_insert AFTER INSERT ON lorries
	REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION lc_lorry_buckets();
CREATE TRIGGER lorry_buckets_delete AFTER DELETE ON lorries
	REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION lc_lorry_buckets();
CREATE TRIGGER lorry_buckets_move AFTER UPDATE OF queue_pos ON lorries
	FOR EACH ROW WHEN (OLD.queue_pos >> 14 IS DISTINCT FROM NEW.queue_pos >> 14)
	EXECUTE FUNCTION lc_lorry_bucket_move();
