-- The paths that the configuration being applied defines, from
-- BeginConfigLorries to EndConfigLorries (statedb/lorryconfig.go): a table
-- rather than a temporary table of the write session, since those
-- transactions may each be served by another server session (behind a
-- pooler in transaction mode). One process at a time applies a
-- configuration, under the lease "read-configuration"; what it keeps
-- here needs no WAL, and is emptied when it begins.
CREATE UNLOGGED TABLE config_seen (
	path TEXT COLLATE "C" PRIMARY KEY
);
