package statedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
)

// Keys of the settings table.
const (
	settingRunningQueue = "running_queue"
	settingMaxJobs      = "max_jobs"
	settingFakeNow      = "fake_now"
	settingConfig       = "config"
	settingLastTick     = "last_tick"
	settingConfigPart   = "config_partial"
)

func (tx *Tx) setting(ctx context.Context, key string) (string, bool, error) {
	var v string
	err := tx.queryRow(ctx, `SELECT value FROM settings WHERE key = $1`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read setting %s: %w", key, err)
	}
	return v, true, nil
}

func (tx *Tx) setSetting(ctx context.Context, key, value string) error {
	_, err := tx.exec(ctx, `INSERT INTO settings (key, value) VALUES ($1, $2)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, value)
	if err != nil {
		return fmt.Errorf("write setting %s: %w", key, err)
	}
	return nil
}

func (tx *Tx) deleteSetting(ctx context.Context, key string) error {
	_, err := tx.exec(ctx, `DELETE FROM settings WHERE key = $1`, key)
	return err
}

// RunningQueue reports whether jobs are being handed out. A new database
// hands them out.
func (tx *Tx) RunningQueue(ctx context.Context) (bool, error) {
	v, ok, err := tx.setting(ctx, settingRunningQueue)
	if err != nil || !ok {
		return true, err
	}
	return v == "1", nil
}

// SetRunningQueue starts or stops handing out jobs.
func (tx *Tx) SetRunningQueue(ctx context.Context, running bool) error {
	v := "0"
	if running {
		v = "1"
	}
	return tx.setSetting(ctx, settingRunningQueue, v)
}

// MaxJobs is the limit on running jobs; nil means no limit.
func (tx *Tx) MaxJobs(ctx context.Context) (*int64, error) {
	v, ok, err := tx.setting(ctx, settingMaxJobs)
	if err != nil || !ok {
		return nil, err
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("setting %s holds %q: %w", settingMaxJobs, v, err)
	}
	return &n, nil
}

// handOutState is what every hand-out reads first: whether the queue
// runs, max_jobs, the max_jobs of the asking minion's host, whether any
// entry is due at all, whether the minion is retired, and whether it has
// a live job.
type handOutState struct {
	running      bool
	max, hostMax *int64
	anyDue       bool
	// retired says that the minion asking is retired, and owns that it
	// has a live job (endOwnedJobs). minionKnown says they were read:
	// on PostgreSQL they are not, at first (pgHandOut).
	retired, owns, minionKnown bool
	// queuesVersion is the count of changes to the queues, on
	// PostgreSQL (queuesAt).
	queuesVersion int64
	// live are the counts of live jobs, read with the rest on
	// PostgreSQL, where each statement is a round trip; nil on SQLite.
	live *liveCounts
}

// handOutState reads the hand-out's state for minion m, in one
// statement. The partial index of idle entries by due time answers "is
// anything due?" at once, from its first entry: asked for any due entry
// instead, PostgreSQL may guess that many are due and scan the table for
// one. On PostgreSQL, where each statement is a round trip, the state
// of the transaction's first hand-out serves those after it (pgHandOut),
// and the minion's own is read only if needed (minionKnown).
func (tx *Tx) handOutState(ctx context.Context, m MinionID) (handOutState, error) {
	return tx.drv.handOutState(ctx, tx, m)
}

// maxJobsValue is the setting of max_jobs as read: nil if unset.
func maxJobsValue(limit sql.NullString) (*int64, error) {
	if !limit.Valid {
		return nil, nil
	}
	n, err := strconv.ParseInt(limit.String, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("setting %s holds %q: %w", settingMaxJobs, limit.String, err)
	}
	return &n, nil
}

// handOutStateQuery reads handOutState.
const handOutStateQuery = `SELECT (SELECT value FROM settings WHERE key = $1), (SELECT value FROM settings WHERE key = $2),
		(SELECT max_jobs FROM host_limits WHERE host = $3),
		(SELECT MIN(next_due) FROM lorries WHERE running_job IS NULL) <= $4,
		COALESCE((SELECT retire FROM minions WHERE name = $5), 0),
		EXISTS (SELECT 1 FROM jobs WHERE minion = $5 AND ` + liveStatus + `)`

// SetMaxJobs sets the limit on running jobs; nil removes it.
func (tx *Tx) SetMaxJobs(ctx context.Context, n *int64) error {
	if n == nil {
		return tx.deleteSetting(ctx, settingMaxJobs)
	}
	if *n < 0 {
		return fmt.Errorf("max_jobs %d is negative: %w", *n, ErrInvalid)
	}
	return tx.setSetting(ctx, settingMaxJobs, strconv.FormatInt(*n, 10))
}

// FakeNow is the stored time of the debug clock, 0 if never set.
func (tx *Tx) FakeNow(ctx context.Context) (int64, error) {
	v, ok, err := tx.setting(ctx, settingFakeNow)
	if err != nil || !ok {
		return 0, err
	}
	return strconv.ParseInt(v, 10, 64)
}

// SetFakeNow stores the time of the debug clock so that it survives a
// restart of the WEBAPP.
func (tx *Tx) SetFakeNow(ctx context.Context, now int64) error {
	return tx.setSetting(ctx, settingFakeNow, strconv.FormatInt(now, 10))
}

// LastTick is tx.Now at the last tick of the schedules, by any process
// sharing the database; 0 before the first.
func (tx *Tx) LastTick(ctx context.Context) (int64, error) {
	v, ok, err := tx.setting(ctx, settingLastTick)
	if err != nil || !ok {
		return 0, err
	}
	return strconv.ParseInt(v, 10, 64)
}

// SetLastTick records tx.Now as the time of the last tick of the
// schedules, for the next tick, of whichever process, to find the clock
// set back behind it.
func (tx *Tx) SetLastTick(ctx context.Context) error {
	return tx.setSetting(ctx, settingLastTick, strconv.FormatInt(tx.Now, 10))
}
