-- The lorries of a configuration applied to an empty run queue, held
-- here batch by batch until all of them are read, and then put into
-- lorries in one transaction (configstaged.go). seq is the order they
-- were given in, added when.
CREATE TABLE config_staged (
	seq             INTEGER PRIMARY KEY,
	path            TEXT NOT NULL,
	text            TEXT NOT NULL,
	kind            TEXT NOT NULL,
	from_path       TEXT NOT NULL,
	interval        INTEGER NOT NULL,
	lorry_timeout   INTEGER NOT NULL,
	added           INTEGER NOT NULL,
	commit_id       TEXT NOT NULL,
	runtime_name    TEXT NOT NULL,
	runtime_version TEXT NOT NULL,
	runtime_id      TEXT NOT NULL,
	runtime_python  TEXT NOT NULL,
	upstream_url    TEXT NOT NULL,
	max_backoff     INTEGER NOT NULL,
	hard_fail_after INTEGER NOT NULL,
	queue           TEXT NOT NULL,
	schedule        TEXT NOT NULL,
	first_due       INTEGER NOT NULL
);
