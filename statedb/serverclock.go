package statedb

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"lorrycontroller.dev/lc/clock"
)

// Every time the database keeps (a lease's term, a job's last report, a
// claim's age) is read from one clock, the database server's, so that
// WEBAPPs on machines whose clocks differ agree on them: none takes a
// lease another holds, or ends another's live jobs as ghosts, because its
// own clock runs ahead. A DB opened with Options.ServerClock tells the
// time by its process's clock corrected by the offset of the server's,
// measured at Open and again at each SyncClock, rather than asking the
// server in every transaction. A SQLite database's server is the machine
// itself, whose clock the same measure reads.

// serverClock is local corrected by the offset of the database server's
// clock, in nanoseconds.
type serverClock struct {
	local  clock.Clock
	offset atomic.Int64
}

func (c *serverClock) Now() time.Time {
	return c.local.Now().Add(time.Duration(c.offset.Load()))
}

// ClockOffset is how far the database server's clock is ahead of this
// process's, as last measured; 0 unless the DB follows the server's
// clock (Options.ServerClock).
func (db *DB) ClockOffset() time.Duration {
	if c, ok := db.clock.(*serverClock); ok {
		return time.Duration(c.offset.Load())
	}
	return 0
}

// SyncClock measures the offset of the database server's clock from this
// process's again, when the DB follows it (Options.ServerClock), and
// returns it: the server's time read in one statement, against the
// midpoint of the process's clock before and after it.
func (db *DB) SyncClock(ctx context.Context) (time.Duration, error) {
	c, ok := db.clock.(*serverClock)
	if !ok {
		return 0, nil
	}
	var before, after time.Time
	var server float64
	err := db.View(ctx, func(tx *Tx) error {
		before = c.local.Now()
		err := tx.queryRow(ctx, db.drv.serverNowQuery()).Scan(&server)
		after = c.local.Now()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("read the database server's clock: %w", err)
	}
	mid := before.Add(after.Sub(before) / 2)
	serverAt := time.Unix(0, int64(server*float64(time.Second)))
	off := serverAt.Sub(mid).Round(time.Millisecond)
	c.offset.Store(int64(off))
	return off, nil
}
