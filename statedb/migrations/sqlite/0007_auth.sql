-- Authentication: the API tokens, kept as SHA-256 hashes only, and the
-- browser sessions signed in with them. Revoking a token ends its
-- sessions.

CREATE TABLE tokens (
	name      TEXT PRIMARY KEY,
	role      TEXT NOT NULL CHECK (role IN ('admin', 'minion')),
	hash      BLOB NOT NULL UNIQUE,
	created   INTEGER NOT NULL,
	last_used INTEGER
);

CREATE TABLE web_sessions (
	hash    BLOB PRIMARY KEY,
	token   TEXT NOT NULL REFERENCES tokens (name) ON DELETE CASCADE,
	csrf    TEXT NOT NULL,
	created INTEGER NOT NULL,
	expires INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX web_sessions_token ON web_sessions (token);
