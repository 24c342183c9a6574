-- The first schema: settings, the run queue, jobs with chunked output,
-- upstream hosts and minions.

CREATE TABLE settings (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE lorries (
	path           TEXT PRIMARY KEY,
	text           TEXT NOT NULL,
	kind           TEXT NOT NULL,
	generated      INTEGER NOT NULL DEFAULT 0,
	from_host      TEXT NOT NULL DEFAULT '',
	from_path      TEXT NOT NULL DEFAULT '',
	interval       INTEGER NOT NULL,
	lorry_timeout  INTEGER NOT NULL,
	queue_pos      INTEGER NOT NULL,
	running_job    INTEGER,
	last_run       INTEGER,
	next_due       INTEGER NOT NULL DEFAULT 0,
	last_run_exit  INTEGER,
	last_run_error TEXT NOT NULL DEFAULT '',
	disk_usage     INTEGER
);
CREATE UNIQUE INDEX lorries_queue ON lorries (queue_pos);
CREATE INDEX lorries_idle_due ON lorries (next_due) WHERE running_job IS NULL;
CREATE INDEX lorries_from_host ON lorries (from_host) WHERE generated = 1;

CREATE TABLE jobs (
	id            INTEGER PRIMARY KEY AUTOINCREMENT,
	path          TEXT NOT NULL,
	kind          TEXT NOT NULL,
	minion        TEXT NOT NULL,
	host          TEXT NOT NULL,
	pid           INTEGER NOT NULL,
	started       INTEGER NOT NULL,
	updated       INTEGER NOT NULL,
	ended         INTEGER,
	status        TEXT NOT NULL,
	exit          INTEGER,
	kill          INTEGER NOT NULL DEFAULT 0,
	kill_reason   TEXT NOT NULL DEFAULT '',
	timeout       INTEGER NOT NULL,
	disk_usage    INTEGER,
	output_bytes  INTEGER NOT NULL DEFAULT 0,
	head_bytes    INTEGER NOT NULL DEFAULT 0,
	tail_bytes    INTEGER NOT NULL DEFAULT 0,
	cut_bytes     INTEGER NOT NULL DEFAULT 0,
	next_chunk    INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX jobs_running ON jobs (minion) WHERE status = 'running';
CREATE INDEX jobs_path ON jobs (path, id);

-- Output arrives in chunks and is stored as it came: appending never
-- rewrites what is already there. Head chunks are kept for good; tail chunks
-- are dropped from the front once the tail is over its share of the cap.
CREATE TABLE job_output (
	job_id INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
	seq    INTEGER NOT NULL,
	tail   INTEGER NOT NULL,
	data   BLOB NOT NULL,
	PRIMARY KEY (job_id, seq)
) WITHOUT ROWID;

CREATE TABLE hosts (
	name          TEXT PRIMARY KEY,
	type          TEXT NOT NULL,
	protocol      TEXT NOT NULL,
	ls_interval   INTEGER NOT NULL,
	interval      INTEGER NOT NULL,
	lorry_timeout INTEGER NOT NULL,
	section       TEXT NOT NULL,
	last_ls       INTEGER,
	last_ls_error TEXT NOT NULL DEFAULT '',
	repos         INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

CREATE TABLE minions (
	name      TEXT PRIMARY KEY,
	host      TEXT NOT NULL,
	pid       INTEGER NOT NULL,
	last_seen INTEGER NOT NULL,
	job_id    INTEGER
) WITHOUT ROWID;
