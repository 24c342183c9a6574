-- A push hook's delivery is one delivery whichever route it arrives on: a
-- hook signed for one forge and sent again to another's route (GitHub's
-- and Gitea's sign alike) is a replay. forge is now only the route that
-- first saw it; of rows that name one delivery under two routes, one is
-- kept.
DELETE FROM hook_deliveries a USING hook_deliveries b
	WHERE a.delivery = b.delivery AND a.forge > b.forge;
CREATE UNIQUE INDEX hook_deliveries_delivery ON hook_deliveries (delivery);
