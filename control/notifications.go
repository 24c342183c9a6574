package control

import (
	"context"

	"lorrycontroller.dev/lc/redact"
	"lorrycontroller.dev/lc/statedb"
)

// Outbox is what the notifications page shows of the outbox.
type Outbox struct {
	// Now is the time of the reading.
	Now int64
	// Counts are the deliveries in the outbox by status.
	Counts map[string]int64
	// Deliveries are the latest, newest first, their errors without the
	// notification URL's secrets.
	Deliveries []statedb.Delivery
}

// ReadOutbox reads the counts of the outbox and its latest n deliveries.
func (a *App) ReadOutbox(ctx context.Context, n int) (Outbox, error) {
	var o Outbox
	err := a.DB.View(ctx, func(tx *statedb.Tx) error {
		o.Now = tx.Now
		var err error
		if o.Counts, err = tx.DeliveryCounts(ctx); err != nil {
			return err
		}
		o.Deliveries, err = tx.Deliveries(ctx, n)
		for i := range o.Deliveries {
			// The deliverer records errors without the URL's secrets;
			// this hides them in rows recorded before it did.
			o.Deliveries[i].LastError = redact.URL(o.Deliveries[i].LastError, a.Notifications.URL)
		}
		return err
	})
	return o, err
}
