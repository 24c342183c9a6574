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

// replicaForget is how long a replica not heard from stays listed.
const replicaForget = 24 * time.Hour

// Heartbeat records that this process is alive, under a.Replica, and
// forgets replicas not heard from for a day. The WEBAPP calls it every
// third of its lease term.
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
		return tx.ForgetReplicas(ctx, tx.Now-int64(replicaForget/time.Second))
	})
}
