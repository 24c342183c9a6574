-- The counts of live jobs by queue and host, as the hand-out and the
-- queues' status read them. On SQLite they are live_jobs as its
-- triggers keep it; PostgreSQL, whose job reports run beside the
-- hand-outs, subtracts the jobs ended since the counts were last brought
-- up to date.
CREATE VIEW live_counts AS SELECT queue, host, n FROM live_jobs;
