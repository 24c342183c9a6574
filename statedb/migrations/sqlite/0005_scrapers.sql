-- Scrapers. A scraper's run-queue entry records the CONFGIT commit it was
-- read from and its runtime there, and a job records them as it was
-- handed them, so that the files handed with a job are the ones of the
-- commit its runtime id comes from, however CONFGIT moves on. The text is
-- the spec as handed out. The minion reports whether it had to build the
-- runtime for the job, and how long that took.
ALTER TABLE lorries ADD COLUMN commit_id TEXT NOT NULL DEFAULT '';
ALTER TABLE lorries ADD COLUMN runtime_name TEXT NOT NULL DEFAULT '';
ALTER TABLE lorries ADD COLUMN runtime_version TEXT NOT NULL DEFAULT '';
ALTER TABLE lorries ADD COLUMN runtime_id TEXT NOT NULL DEFAULT '';
ALTER TABLE lorries ADD COLUMN runtime_python TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN text TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN commit_id TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN runtime_name TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN runtime_version TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN runtime_id TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN runtime_python TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN runtime_built INTEGER;
ALTER TABLE jobs ADD COLUMN runtime_build_seconds REAL;
