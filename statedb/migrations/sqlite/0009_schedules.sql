-- Schedules, the two-phase hand-out and retiring minions.
--
-- A scheduled entry keeps its schedule (the item's JSON, "" for none) and
-- the state of its stateful cron: the clocks when it was last looked at and
-- the instant up to which its events were dealt with.
ALTER TABLE lorries ADD COLUMN schedule TEXT NOT NULL DEFAULT '';
ALTER TABLE lorries ADD COLUMN cron_wall INTEGER NOT NULL DEFAULT 0;
ALTER TABLE lorries ADD COLUMN cron_mono INTEGER NOT NULL DEFAULT 0;
ALTER TABLE lorries ADD COLUMN cron_boot TEXT NOT NULL DEFAULT '';
ALTER TABLE lorries ADD COLUMN cron_handled INTEGER NOT NULL DEFAULT 0;
-- cron_next is the next event the state has not dealt with: next_due once
-- a job ends.
ALTER TABLE lorries ADD COLUMN cron_next INTEGER NOT NULL DEFAULT 0;
CREATE INDEX lorries_scheduled ON lorries (path) WHERE schedule != '';

-- A job handed out is claimed until its minion confirms it: a live job is
-- claimed or running.
DROP INDEX jobs_running;
CREATE INDEX jobs_live ON jobs (minion) WHERE status IN ('claimed', 'running');
CREATE INDEX jobs_claimed ON jobs (started) WHERE status = 'claimed';

-- heard counts what the minion's current process said, so that a process
-- heard once is told from one that keeps polling; retire is 0, or 1 to
-- have it finish its job and exit, or 2 to have it kill its job first.
ALTER TABLE minions ADD COLUMN heard INTEGER NOT NULL DEFAULT 1;
ALTER TABLE minions ADD COLUMN retire INTEGER NOT NULL DEFAULT 0;
