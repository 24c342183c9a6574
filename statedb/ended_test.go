package statedb

import (
	"context"
	"errors"
	"testing"
)

// TestEndedContextSaysSo checks that a transaction asked for with a
// context that has ended fails with the context's error, on both
// backends, and that the sessions still serve the next transactions.
func TestEndedContextSaysSo(t *testing.T) {
	f := newFixture(t, Options{})
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	// View takes a read session or the context's end, whichever it
	// finds first: enough calls take a session.
	for i := range 20 {
		err := f.db.View(ended, func(*Tx) error { return nil })
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("view %d with an ended context: %v; want %v", i, err, context.Canceled)
		}
	}
	f.view(t, func(tx *Tx) error {
		var one int
		return tx.queryRow(context.Background(), `SELECT 1`).Scan(&one)
	})
}
