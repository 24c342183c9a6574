-- How much of each of a job's output streams the WEBAPP has, stored or cut
-- by the minion: a report carries where its output starts in each stream
-- (stdout_offset, stderr_offset), and a report sent again after its answer
-- was lost adds only what is past these.
ALTER TABLE jobs ADD COLUMN stdout_bytes BIGINT NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN stderr_bytes BIGINT NOT NULL DEFAULT 0;
