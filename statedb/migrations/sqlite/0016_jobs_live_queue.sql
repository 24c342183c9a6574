-- The running jobs by queue and host, which every hand-out counts, read
-- from this index alone.

CREATE INDEX jobs_live_queue ON jobs (queue, host, status) WHERE status IN ('claimed', 'running');
