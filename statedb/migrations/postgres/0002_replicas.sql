-- The WEBAPP processes sharing the database: each says, every third of
-- its lease term, that it is alive, under the name and address the
-- others and the status page show, and the owner its leases are taken
-- under.
CREATE TABLE replicas (
	name      TEXT COLLATE "C" PRIMARY KEY,
	url       TEXT COLLATE "C" NOT NULL,
	owner     TEXT COLLATE "C" NOT NULL,
	started   BIGINT NOT NULL,
	last_seen BIGINT NOT NULL
);
