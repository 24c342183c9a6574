package statedb

import (
	"context"
	"database/sql"
	"fmt"
)

// OldestPendingDelivery is when the oldest notification still waiting to be
// delivered was written to the outbox; nil when none waits.
func (tx *Tx) OldestPendingDelivery(ctx context.Context) (*int64, error) {
	var created sql.NullInt64
	err := tx.queryRow(ctx, `SELECT MIN(created) FROM outbox WHERE status = ?`, DeliveryPending).Scan(&created)
	if err != nil {
		return nil, fmt.Errorf("oldest pending delivery: %w", err)
	}
	return nullInt(created), nil
}
