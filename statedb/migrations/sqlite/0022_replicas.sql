-- The WEBAPP processes sharing the database: each says, every third of
-- its lease term, that it is alive, under the name and address the
-- others and the status page show, and the owner its leases are taken
-- under.
CREATE TABLE replicas (
	name      TEXT PRIMARY KEY,
	url       TEXT NOT NULL,
	owner     TEXT NOT NULL,
	started   INTEGER NOT NULL,
	last_seen INTEGER NOT NULL
) WITHOUT ROWID;
