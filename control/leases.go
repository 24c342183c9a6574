package control

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"time"

	"lorrycontroller.dev/lc/statedb"
)

// The kinds of work that one WEBAPP process at a time does, each under
// the lease of its kind in the database (statedb.Tx.TakeLease), so that
// any number of processes may share one database.
const (
	// LeaseConfig is held while a configuration is read and applied
	// (ApplyConfiguration), renewed in each of its transactions.
	LeaseConfig = "read-configuration"
	// LeaseListing is held while the Upstream Hosts are listed
	// (ListDueHosts), renewed before each host is listed.
	LeaseListing = "ls-troves"
	// LeaseTick is held while the schedules are ticked and unconfirmed
	// claims ended (Tick), renewed in each of its transactions.
	LeaseTick = "tick"
)

// Lease terms: each covers the longest stretch of its work between two
// renewals, with room to spare, so that a lease runs out only when its
// holder died or hangs.
const (
	// configLeaseTerm covers reading one batch of the configuration's
	// lorries from CONFGIT (or fetching CONFGIT, before the first).
	configLeaseTerm = 10 * time.Minute
	// listingLeaseTerm covers listing one host and applying the listing
	// to the lorries and the downstream repositories.
	listingLeaseTerm = 10 * time.Minute
	// tickLeaseTerm covers a transaction of a tick.
	tickLeaseTerm = time.Minute
)

// DefaultLeaseTerm is the term of every lease of a WEBAPP
// (--replica-lease): a lease is renewed every third of it while its work
// runs, so a replica that died gives its work up to another within it.
const DefaultLeaseTerm = 15 * time.Second

// DefaultLeaseWait is how long an operation that an admin or a hook
// asked for waits for a lease another process holds before answering
// ErrBusy (App.LeaseWait); leasePoll is how often it asks meanwhile.
const (
	DefaultLeaseWait = 30 * time.Second
	leasePoll        = 100 * time.Millisecond
)

func (a *App) leaseWait() time.Duration {
	if a.LeaseWait > 0 {
		return a.LeaseWait
	}
	return DefaultLeaseWait
}

// ErrBusy is an operation that could not run because another WEBAPP
// process sharing the database is doing the same work: try again. The
// errors the operations return for it are statedb.ErrConflict too, which
// the routes answer with 409.
var ErrBusy = errors.New("another WEBAPP is doing this work")

// busyError is ErrBusy saying which work.
type busyError struct{ what string }

func (e *busyError) Error() string { return "another WEBAPP is " + e.what + "; try again" }

func (e *busyError) Is(target error) bool { return target == ErrBusy || target == statedb.ErrConflict }

func busy(what string) error { return &busyError{what} }

// owner is the name this process holds leases under: a.Owner, or one made
// once of the host's name, the pid and a random part.
func (a *App) owner() string {
	a.ownerOnce.Do(func() {
		if a.Owner != "" {
			a.ownerName = a.Owner
			return
		}
		name := a.Replica.Name
		if name == "" {
			name, _ = os.Hostname()
		}
		b := make([]byte, 6)
		_, _ = rand.Read(b)
		a.ownerName = fmt.Sprintf("%s/%d/%s", name, os.Getpid(), hex.EncodeToString(b))
	})
	return a.ownerName
}

// takeLease takes the lease of kind, in a transaction of its own. If
// another process holds it, it asks again every leasePoll until wait has
// passed, and then answers false. Once taken, the lease is renewed every
// third of its term until releaseLease; the work done under it runs
// under the context returned, which ends if a renewal finds the lease
// taken by another process (the fence of each of the work's transactions,
// checkLease, refuses its writes then in any case).
func (a *App) takeLease(ctx context.Context, kind string, wait time.Duration) (context.Context, bool, error) {
	deadline := time.Now().Add(wait)
	term := a.leaseTerm(kind)
	for {
		l, ok, err := a.DB.TakeLease(ctx, kind, a.owner(), term)
		if ok && err == nil {
			return a.keepLease(ctx, l), true, nil
		}
		if err != nil {
			return ctx, false, err
		}
		if !time.Now().Before(deadline) {
			return ctx, false, nil
		}
		t := time.NewTimer(leasePoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx, false, ctx.Err()
		case <-t.C:
		}
	}
}

// leaseTerm is the term of kind's lease: LeaseTerm, or the kind's own.
func (a *App) leaseTerm(kind string) time.Duration {
	if a.LeaseTerm > 0 {
		return a.LeaseTerm
	}
	switch kind {
	case LeaseConfig:
		return configLeaseTerm
	case LeaseListing:
		return listingLeaseTerm
	}
	return tickLeaseTerm
}

// heldLease is a lease this process took, and the means to stop
// renewing it.
type heldLease struct {
	lease statedb.Lease
	stop  func() func()
}

// keepLease notes the lease l, just taken, as this process's, renews it
// every third of its term until releaseLease, and returns the context of
// the work under it.
//
// The renewals run beside the work's own transactions and never wait
// behind them (statedb.DB.RenewLease), and a renewal that fails for
// another reason than the lease being taken (the database unreachable)
// is tried again: the work goes on, as its transactions' fence keeps it
// from writing once another process has taken the lease. Only when no
// renewal has succeeded for a whole term, so that another may have
// taken the lease without this process hearing of it, does the work
// stop.
func (a *App) keepLease(ctx context.Context, l statedb.Lease) context.Context {
	// From here to "lease released" the lease is this process's.
	a.Log.Debug("lease taken", "kind", l.Kind, "owner", l.Owner, "at_ns", time.Now().UnixNano(), "token", l.Token)
	term := a.leaseTerm(l.Kind)
	work, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	stopped := make(chan struct{})
	a.leaseMu.Lock()
	if a.kept == nil {
		a.kept = map[string]heldLease{}
	}
	a.kept[l.Kind] = heldLease{lease: l, stop: func() func() { close(done); <-stopped; return func() { cancel(nil) } }}
	a.leaseMu.Unlock()
	go func() {
		defer close(stopped)
		held := time.Now()
		t := time.NewTicker(term / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			start := time.Now()
			rctx, rcancel := context.WithDeadline(context.WithoutCancel(ctx), held.Add(term))
			err := a.DB.RenewLease(rctx, l, term)
			rcancel()
			if err == nil {
				held = start
				continue
			}
			if errors.Is(err, statedb.ErrTaken) || time.Since(held) >= term {
				a.Log.Warn("lease lost; stopping its work", "kind", l.Kind, "token", l.Token, "err", err)
				cancel(fmt.Errorf("the lease of %s was lost: %w", l.Kind, errors.Join(statedb.ErrTaken, err)))
				<-done
				return
			}
		}
	}()
	return work
}

// heldLeaseOf is the lease of kind this process holds, as it took it.
func (a *App) heldLeaseOf(kind string) (statedb.Lease, bool) {
	a.leaseMu.Lock()
	defer a.leaseMu.Unlock()
	h, ok := a.kept[kind]
	return h.lease, ok
}

// checkLease is the fence of tx, whose work needs the lease of kind: if
// this process does not hold it, or another process took it since this
// one did, the work is not done and the answer is statedb.ErrTaken.
func (a *App) checkLease(ctx context.Context, tx *statedb.Tx, kind string) error {
	l, ok := a.heldLeaseOf(kind)
	if !ok {
		return fmt.Errorf("the lease of %s is not held: %w", kind, statedb.ErrTaken)
	}
	return tx.CheckLease(ctx, l)
}

// stopKeeping stops renewing the lease of kind (keepLease), if it is
// renewed, forgets it, and returns what ends the context of its work,
// for when the work is done.
func (a *App) stopKeeping(kind string) (end func()) {
	a.leaseMu.Lock()
	h, ok := a.kept[kind]
	delete(a.kept, kind)
	a.leaseMu.Unlock()
	if !ok {
		return func() {}
	}
	return h.stop()
}

// releaseLease gives up the lease of kind once its work is done, even if
// ctx ended; a failure is only logged, as the lease runs out anyway.
func (a *App) releaseLease(ctx context.Context, kind string) {
	ctx = context.WithoutCancel(ctx)
	l, ok := a.heldLeaseOf(kind)
	defer a.stopKeeping(kind)()
	if !ok {
		return
	}
	a.Log.Debug("lease released", "kind", kind, "owner", l.Owner, "at_ns", time.Now().UnixNano(), "token", l.Token)
	if err := a.DB.ReleaseLease(ctx, l); err != nil {
		a.Log.Warn("release lease", "kind", kind, "err", err)
	}
}
