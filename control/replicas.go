package control

import (
	"context"
	"log/slog"
	"net"
	"os"
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

// ReplicaOf is how a WEBAPP listening on addr is known to the others:
// by name and url (--replica-name and --replica-url), or by the host's
// name and the port, and by the listening address.
func ReplicaOf(name, url, addr string) Replica {
	r := Replica{Name: name, URL: url}
	_, port, _ := net.SplitHostPort(addr)
	if r.Name == "" {
		host, _ := os.Hostname()
		r.Name = host + ":" + port
	}
	if r.URL == "" {
		r.URL = "http://" + addr
	}
	return r
}

// Heartbeater is the WEBAPP's own loop that records that it is alive
// (App.Heartbeat) and follows the STATEDB server's clock.
type Heartbeater struct {
	App *App
	// Every is a third of the lease term, or less.
	Every time.Duration
}

// Run beats at once, then every hb.Every until ctx ends.
func (hb *Heartbeater) Run(ctx context.Context) {
	started := time.Now()
	every := hb.Every
	if every <= 0 {
		every = DefaultLeaseTerm / 3
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		hb.runOnce(ctx, started)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// runOnce records that the WEBAPP started at started is alive, and reads
// the STATEDB server's clock again, warning when the offset moved by a
// second or more.
func (hb *Heartbeater) runOnce(ctx context.Context, started time.Time) {
	a := hb.App
	if err := a.Heartbeat(ctx, started); err != nil && ctx.Err() == nil {
		a.Log.Warn("heartbeat", "err", err)
	}
	before := a.DB.ClockOffset()
	if off, err := a.DB.SyncClock(ctx); err != nil && ctx.Err() == nil {
		a.Log.Warn("read the STATEDB server's clock", "err", err)
	} else if err == nil && (off-before).Abs() >= time.Second {
		WarnClockOffset(off, a.Log)
	}
}

// WarnClockOffset says when this machine's clock is a second or more off
// the STATEDB server's, which the WEBAPP's times follow.
func WarnClockOffset(off time.Duration, log *slog.Logger) {
	if off.Abs() >= time.Second {
		log.Warn("this machine's clock differs from the STATEDB server's; the WEBAPP keeps the server's time", "server_ahead_ms", off.Milliseconds())
	}
}
