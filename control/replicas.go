package control

import (
	"context"
	"time"

	"lorrycontroller.dev/lc/statedb"
)

// Replica is how a WEBAPP process is known to the others sharing its
// database and on the status page.
type Replica struct {
	// Name is unique among the processes sharing the database
	// (--replica-name).
	Name string
	// URL is where the others and the browsers reach it (--replica-url).
	URL string
}

// DefaultReplicaForget is how long a replica not heard from stays listed
// (--replica-forget).
const DefaultReplicaForget = 24 * time.Hour

// The states of a replica (ReplicaState).
const (
	ReplicaUp   = "up"
	ReplicaDown = "down"
)

// ReplicaState says whether replica r is up or down at now. A replica
// records that it is alive every third of its lease term (Heartbeat):
// one not seen for two terms has missed six of those, its leases have
// run out, and it is down (killed, stopped, or cut off from the
// database). It stays listed, down, until ReplicaForget forgets it.
func (a *App) ReplicaState(r statedb.Replica, now int64) string {
	term := a.LeaseTerm
	if term <= 0 {
		term = DefaultLeaseTerm
	}
	if now-r.LastSeen > int64((2 * term).Seconds()) {
		return ReplicaDown
	}
	return ReplicaUp
}

// replicaForget is ReplicaForget, or its default.
func (a *App) replicaForget() time.Duration {
	if a.ReplicaForget <= 0 {
		return DefaultReplicaForget
	}
	return a.ReplicaForget
}

// Heartbeat records that this process is alive, under a.Replica, and
// forgets replicas not heard from for ReplicaForget. The WEBAPP calls it
// every third of its lease term.
func (a *App) Heartbeat(ctx context.Context, started time.Time) error {
	if a.Replica.Name == "" {
		return nil
	}
	return a.DB.Update(ctx, func(tx *statedb.Tx) error {
		err := tx.SeeReplica(ctx, statedb.Replica{Name: a.Replica.Name, URL: a.Replica.URL,
			Owner: a.owner(), Started: started.Unix()})
		if err != nil {
			return err
		}
		return tx.ForgetReplicas(ctx, tx.Now-int64(a.replicaForget().Seconds()))
	})
}
