-- A count of the changes to the queues, made by a trigger, which every
-- hand-out reads with its settings: a WEBAPP keeps the queue list it
-- read until the count moves, as it does on SQLite by the file's
-- data_version, and spares each hand-out reading it.
CREATE TABLE queues_version (n BIGINT NOT NULL);
INSERT INTO queues_version (n) VALUES (1);

CREATE FUNCTION lc_queues_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	UPDATE queues_version SET n = n + 1;
	RETURN NULL;
END
$$;

CREATE TRIGGER queues_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON queues
	FOR EACH STATEMENT EXECUTE FUNCTION lc_queues_changed();
