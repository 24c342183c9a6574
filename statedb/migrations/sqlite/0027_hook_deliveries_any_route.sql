-- A push hook's delivery is one delivery whichever route it arrives on: a
-- hook signed for one forge and sent again to another's route (GitHub's
-- and Gitea's sign alike) is a replay. forge is now only the route that
-- first saw it; of rows that name one delivery under two routes, the
-- first kept.
DELETE FROM hook_deliveries WHERE rowid NOT IN (SELECT MIN(rowid) FROM hook_deliveries GROUP BY delivery);
CREATE UNIQUE INDEX hook_deliveries_delivery ON hook_deliveries (delivery);
