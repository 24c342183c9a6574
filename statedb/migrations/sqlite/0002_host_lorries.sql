-- Lorries generated from an upstream host carry the upstream repository's
-- description and default branch, for the downstream repository.
ALTER TABLE lorries ADD COLUMN description TEXT NOT NULL DEFAULT '';
ALTER TABLE lorries ADD COLUMN default_branch TEXT NOT NULL DEFAULT '';
