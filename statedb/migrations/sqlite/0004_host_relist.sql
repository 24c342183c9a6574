-- A host whose section changed is listed again at the next ls-troves,
-- whatever its ls-interval says.
ALTER TABLE hosts ADD COLUMN relist INTEGER NOT NULL DEFAULT 0;
