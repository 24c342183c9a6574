-- The end of a job's output that a carriage return may still rewrite (a
-- progress line), held back from job_output until its line is over.
ALTER TABLE jobs ADD COLUMN output_carry BLOB NOT NULL DEFAULT x'';
