-- The refs that a successful job created, updated and deleted, as lorry
-- reported them: one JSON object per job (see RefChanges), gone with the
-- job.
CREATE TABLE job_refs (
	job_id INTEGER PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE,
	refs   TEXT NOT NULL
);
