-- A lease's fencing token: one more at each take by a holder that did not
-- hold it unexpired, kept while the holder renews it and when it is
-- released (the row stays, without an owner). Every write made under a
-- lease checks, in its own transaction, that the lease is still its
-- holder's under the token it took (Tx.CheckLease), so that a process
-- frozen past its term writes nothing once another has taken it.
ALTER TABLE leases ADD COLUMN token BIGINT NOT NULL DEFAULT 0;
