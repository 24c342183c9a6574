package statedb

import (
	"context"
	"testing"
)

func TestOldestPendingDelivery(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{Notify: allEvents()})
	oldest := func() *int64 {
		t.Helper()
		var at *int64
		err := f.db.View(ctx, func(tx *Tx) error { var err error; at, err = tx.OldestPendingDelivery(ctx); return err })
		if err != nil {
			t.Fatal(err)
		}
		return at
	}
	if at := oldest(); at != nil {
		t.Fatalf("oldest pending of an empty outbox = %d; want none", *at)
	}
	f.update(t, func(tx *Tx) error { return tx.Notify(ctx, EventJobFailed, JobFailed{Lorry: "a"}) })
	f.clock.Set(1100)
	f.update(t, func(tx *Tx) error { return tx.Notify(ctx, EventJobFailed, JobFailed{Lorry: "b"}) })
	if at := oldest(); at == nil || *at != 1000 {
		t.Fatalf("oldest pending = %v; want 1000", at)
	}
	first := f.outbox(t)[0].ID
	for _, d := range f.outbox(t) {
		if d.Created == 1000 {
			first = d.ID
		}
	}
	f.update(t, func(tx *Tx) error {
		return tx.RecordDelivery(ctx, first, DeliveryAttempt{Status: DeliveryDelivered, Code: 204})
	})
	if at := oldest(); at == nil || *at != 1100 {
		t.Fatalf("oldest pending once the first is delivered = %v; want 1100", at)
	}
}
