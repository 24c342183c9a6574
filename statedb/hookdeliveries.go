package statedb

import (
	"context"
	"fmt"
)

// HookDeliveryTTL is how long a push hook's delivery is remembered, in
// seconds: forges give up redelivering well within a day.
const HookDeliveryTTL = 24 * 60 * 60

// RememberHookDelivery records that a push hook that arrived on the
// route of forge, known by each of keys (its delivery id, the digest of
// its body), is acted on, and says whether it is new: false when any of
// its keys was recorded within HookDeliveryTTL, on any forge's route,
// and then the hook must not be acted on again: a hook signed for one
// forge and sent to another's route is the same delivery. Keys recorded
// longer ago than that are forgotten first. The rule is the table's
// unique index on the key alone: of two deliveries of one hook, however
// they interleave and whichever routes they take, one inserts and the
// other finds it there.
func (tx *Tx) RememberHookDelivery(ctx context.Context, forge string, keys []string) (bool, error) {
	if _, err := tx.exec(ctx, `DELETE FROM hook_deliveries WHERE expires <= $1`, tx.Now); err != nil {
		return false, fmt.Errorf("forget old hook deliveries: %w", err)
	}
	fresh := true
	for _, k := range keys {
		res, err := tx.exec(ctx, `INSERT INTO hook_deliveries (forge, delivery, expires) VALUES ($1, $2, $3)
			ON CONFLICT DO NOTHING`, forge, k, tx.Now+HookDeliveryTTL)
		if err != nil {
			return false, fmt.Errorf("remember hook delivery: %w", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return false, fmt.Errorf("remember hook delivery: %w", err)
		}
		if n == 0 {
			fresh = false
		}
	}
	return fresh, nil
}
