-- Leases of periodic work: a row per kind of work that one process at a
-- time may do (a schedule tick, a sweep, a listing of the hosts, applying
-- the configuration), naming the process that does it and until when.
-- A process takes a free or expired lease, or renews its own, with one
-- guarded write (Tx.TakeLease), so that any number of WEBAPPs sharing the
-- database agree on who does the work. taken is when the owner first took
-- it, kept while it renews.
CREATE TABLE leases (
	kind    TEXT PRIMARY KEY,
	owner   TEXT NOT NULL,
	taken   INTEGER NOT NULL,
	expires INTEGER NOT NULL
) WITHOUT ROWID;
