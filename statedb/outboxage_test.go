package statedb

import (
	"context"
	"testing"
)

func TestPendingDeliveries(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{Notify: allEvents()})
	pending := func() (int64, *int64) {
		t.Helper()
		var n int64
		var at *int64
		err := f.db.View(ctx, func(tx *Tx) error { var err error; n, at, err = tx.PendingDeliveries(ctx); return err })
		if err != nil {
			t.Fatal(err)
		}
		return n, at
	}
	if n, at := pending(); n != 0 || at != nil {
		t.Fatalf("pending of an empty outbox = %d, %v; want none", n, at)
	}
	f.update(t, func(tx *Tx) error { return tx.Notify(ctx, EventJobFailed, JobFailed{Lorry: "a"}) })
	f.clock.Set(1100)
	f.update(t, func(tx *Tx) error { return tx.Notify(ctx, EventJobFailed, JobFailed{Lorry: "b"}) })
	if n, at := pending(); n != 2 || at == nil || *at != 1000 {
		t.Fatalf("pending = %d, %v; want 2, the oldest at 1000", n, at)
	}
	for _, d := range f.outbox(t) {
		if d.Created == 1000 {
			f.update(t, func(tx *Tx) error {
				return tx.RecordDelivery(ctx, d.ID, DeliveryAttempt{Status: DeliveryDelivered, Code: 204})
			})
		}
	}
	if n, at := pending(); n != 1 || at == nil || *at != 1100 {
		t.Fatalf("pending once the first is delivered = %d, %v; want 1, at 1100", n, at)
	}
}
