-- The run queue's entries counted by ranges of 16,384 queue positions
-- (queue_pos >> 14), kept by triggers: the total is a sum of a few hundred
-- rows, and an entry's place in the run queue that sum below its range and
-- a count within the range, where counting the index took a walk of up to
-- a million entries (45 ms for a lorry's page at a million lorries). An
-- empty range has no row, so the table stays as small as the queue is
-- dense, however far the positions move on. A later migration that builds
-- lorries anew drops these triggers with the old table: it must create
-- them again, and count the ranges again.
CREATE TABLE lorry_buckets (
	bucket INTEGER PRIMARY KEY,
	n      INTEGER NOT NULL
);
INSERT INTO lorry_buckets (bucket, n) SELECT queue_pos >> 14, COUNT(*) FROM lorries GROUP BY queue_pos >> 14;
CREATE TRIGGER lorry_buckets_insert AFTER INSERT ON lorries BEGIN
	INSERT INTO lorry_buckets (bucket, n) VALUES (new.queue_pos >> 14, 1)
		ON CONFLICT (bucket) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER lorry_buckets_delete AFTER DELETE ON lorries BEGIN
	UPDATE lorry_buckets SET n = n - 1 WHERE bucket = old.queue_pos >> 14;
	DELETE FROM lorry_buckets WHERE bucket = old.queue_pos >> 14 AND n = 0;
END;
CREATE TRIGGER lorry_buckets_move AFTER UPDATE OF queue_pos ON lorries
	WHEN old.queue_pos >> 14 != new.queue_pos >> 14 BEGIN
	UPDATE lorry_buckets SET n = n - 1 WHERE bucket = old.queue_pos >> 14;
	DELETE FROM lorry_buckets WHERE bucket = old.queue_pos >> 14 AND n = 0;
	INSERT INTO lorry_buckets (bucket, n) VALUES (new.queue_pos >> 14, 1)
		ON CONFLICT (bucket) DO UPDATE SET n = n + 1;
END;
