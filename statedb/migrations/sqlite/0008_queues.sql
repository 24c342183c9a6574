-- Queues. Every run-queue entry is in one queue, and every job records the
-- queue it ran in, so that the running jobs of a queue are counted without
-- looking at lorries (a removed lorry's job still counts). A queue section
-- of the configuration is a row of queues; "default" needs none. A host's
-- cap on jobs running at once, whatever its number of minions, is a row of
-- host_limits.
ALTER TABLE lorries ADD COLUMN queue TEXT NOT NULL DEFAULT 'default';
ALTER TABLE jobs ADD COLUMN queue TEXT NOT NULL DEFAULT 'default';
ALTER TABLE hosts ADD COLUMN queue TEXT NOT NULL DEFAULT 'default';

CREATE TABLE queues (
	name     TEXT PRIMARY KEY,
	threads  INTEGER,
	sort     TEXT NOT NULL DEFAULT 'queue-order',
	schedule TEXT NOT NULL DEFAULT ''
) WITHOUT ROWID;

CREATE TABLE host_limits (
	host     TEXT PRIMARY KEY,
	max_jobs INTEGER NOT NULL
) WITHOUT ROWID;

-- The idle entries of each queue in queue order, and by when they fell
-- due: a hand-out looks into each open queue at once, however many entries
-- the full queues hold.
CREATE INDEX lorries_queue_order ON lorries (queue, queue_pos) WHERE running_job IS NULL;
CREATE INDEX lorries_queue_due ON lorries (queue, next_due, queue_pos) WHERE running_job IS NULL;
