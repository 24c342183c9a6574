-- Push-triggered runs. upstream_url is a git lorry's upstream URL in the
-- normalised form that a forge's push hook is matched against, so that a
-- push finds its lorries through an index instead of reading every spec.
-- run_again says that a run was asked for (by a push or run-now) while a
-- job of the lorry was running: the lorry is due again as soon as that job
-- ends, once however many were asked for.
ALTER TABLE lorries ADD COLUMN upstream_url TEXT NOT NULL DEFAULT '';
ALTER TABLE lorries ADD COLUMN run_again INTEGER NOT NULL DEFAULT 0;
CREATE INDEX lorries_upstream_url ON lorries (upstream_url) WHERE upstream_url != '';

-- What the last listing of a host did to the downstream repositories of
-- the repositories that vanished from it, by the host's on-vanish policy.
ALTER TABLE hosts ADD COLUMN vanished TEXT NOT NULL DEFAULT '';
