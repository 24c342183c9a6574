-- A tick of the schedules looks only at the entries whose next event has
-- come (cron_next at or before now): a range of this index, empty between
-- events however many schedules there are.
CREATE INDEX lorries_cron_next ON lorries (cron_next) WHERE schedule != '';
