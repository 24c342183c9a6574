-- The branch that the upstream's HEAD named at the lorry's last successful
-- job that reported one: the downstream's default branch follows it.
ALTER TABLE lorries ADD COLUMN upstream_head TEXT NOT NULL DEFAULT '';
