-- The failing lorries in queue order, so that the status page lists the
-- first of them at once however long the queue is and wherever in it they
-- are. The condition is FailingLorries' own, word for word, as SQLite
-- uses a partial index only for a query that states its condition.
CREATE INDEX lorries_failing ON lorries (queue_pos) WHERE last_run_exit != 0 OR last_run_error != '';
