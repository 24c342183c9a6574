package statedb

import (
	"context"
	"testing"
	"time"
)

// TestReplicas records two replicas, gives one a lease, and forgets the
// one not seen for long.
func TestReplicas(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	f.update(t, func(tx *Tx) error {
		if err := tx.SeeReplica(ctx, Replica{Name: "r1", URL: "http://a", Owner: "r1/1/x", Started: 900}); err != nil {
			return err
		}
		return tx.SeeReplica(ctx, Replica{Name: "r2", URL: "http://b", Owner: "r2/2/y", Started: 950})
	})
	if ok, err := f.db.TakeLease(ctx, "tick", "r2/2/y", 15*time.Second); !ok || err != nil {
		t.Fatalf("TakeLease = %v, %v", ok, err)
	}
	f.clock.Set(2000)
	f.update(t, func(tx *Tx) error {
		// r1 started again: a new owner, a new start.
		return tx.SeeReplica(ctx, Replica{Name: "r1", URL: "http://a2", Owner: "r1/3/z", Started: 1990})
	})
	var got []Replica
	f.view(t, func(tx *Tx) error {
		var err error
		got, err = tx.Replicas(ctx)
		return err
	})
	if len(got) != 2 || got[0].Name != "r1" || got[0].URL != "http://a2" || got[0].Started != 1990 || got[0].LastSeen != 2000 ||
		got[1].Name != "r2" || got[1].LastSeen != 1000 || len(got[1].Leases) != 0 {
		t.Errorf("replicas = %+v", got)
	}
	f.clock.Set(1005)
	f.view(t, func(tx *Tx) error {
		got, _ = tx.Replicas(ctx)
		return nil
	})
	if len(got) != 2 || len(got[1].Leases) != 1 || got[1].Leases[0] != "tick" {
		t.Errorf("r2's leases = %+v; want [tick]", got)
	}
	f.update(t, func(tx *Tx) error { return tx.ForgetReplicas(ctx, 1500) })
	f.view(t, func(tx *Tx) error {
		got, _ = tx.Replicas(ctx)
		return nil
	})
	if len(got) != 1 || got[0].Name != "r1" {
		t.Errorf("after forgetting: %+v; want r1 alone", got)
	}
}
