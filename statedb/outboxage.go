package statedb

import (
	"context"
	"database/sql"
	"fmt"
)

// PendingDeliveries counts the notifications waiting to be delivered, and
// tells when the oldest of them was written to the outbox (nil when none
// waits). It reads only the pending rows, through their index, so it
// costs the same however many were delivered or given up.
func (tx *Tx) PendingDeliveries(ctx context.Context) (n int64, oldest *int64, err error) {
	var created sql.NullInt64
	err = tx.queryRow(ctx, `SELECT COUNT(*), MIN(created) FROM outbox WHERE status = 'pending'`).Scan(&n, &created)
	if err != nil {
		return 0, nil, fmt.Errorf("count pending deliveries: %w", err)
	}
	return n, nullInt(created), nil
}
