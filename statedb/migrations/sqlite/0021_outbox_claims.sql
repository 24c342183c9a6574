-- A deliverer claims the pending notifications it is about to POST, for
-- a term, so that two WEBAPPs sharing the database never deliver the same
-- one at once; a claim that runs out (its deliverer died) frees the row
-- for another. claimed_until 0 is no claim.
ALTER TABLE outbox ADD COLUMN claimed_by TEXT NOT NULL DEFAULT '';
ALTER TABLE outbox ADD COLUMN claimed_until INTEGER NOT NULL DEFAULT 0;
