-- The push hooks acted on, for a day, so that a hook sent again (a replay
-- of a signed hook, or a forge's own redelivery) is not acted on twice.
-- delivery is the forge's delivery id, or the digest of the hook's body:
-- the signature covers the body only, so a replay under a new delivery id
-- is caught by its body. expires is when the row may go.
CREATE TABLE hook_deliveries (
	forge    TEXT NOT NULL,
	delivery TEXT NOT NULL,
	expires  INTEGER NOT NULL,
	PRIMARY KEY (forge, delivery)
);
CREATE INDEX hook_deliveries_expires ON hook_deliveries (expires);
