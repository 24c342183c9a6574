-- The paged listing of lorries (GET /1.0/lorries) walks lorries in path
-- order from where the last page ended. Unfiltered, or by path prefix, it
-- walks the primary key; by state or by queue, one of these, so that a
-- page of the few failing lorries among 100,000 reads those alone.

CREATE INDEX lorries_state_path ON lorries (state, path);
CREATE INDEX lorries_queue_path ON lorries (queue, path);
