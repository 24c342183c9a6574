package statedb

import (
	"context"
	"database/sql"
	"fmt"
)

// JobTiming is when a job started and ended, for the job duration metrics.
type JobTiming struct {
	ID      int64
	Kind    string
	Status  string
	Started int64
	Ended   *int64 // nil while it runs
}

// JobTimings lists the jobs whose id is fromID or more, oldest first. Ids
// only grow, so a caller that remembers where it stopped reads each job
// once, and the running jobs again until they end.
func (tx *Tx) JobTimings(ctx context.Context, fromID int64) ([]JobTiming, error) {
	rows, err := tx.query(ctx, `SELECT id, kind, status, started, ended FROM jobs WHERE id >= $1 ORDER BY id`, fromID)
	if err != nil {
		return nil, fmt.Errorf("list job timings: %w", err)
	}
	defer rows.Close()
	var out []JobTiming
	for rows.Next() {
		var j JobTiming
		var ended sql.NullInt64
		if err := rows.Scan(&j.ID, &j.Kind, &j.Status, &j.Started, &ended); err != nil {
			return nil, fmt.Errorf("list job timings: %w", err)
		}
		j.Ended = nullInt(ended)
		out = append(out, j)
	}
	return out, rows.Err()
}

// LastJobID is the id of the newest job ever created, or 0. Removing jobs
// does not lower it: the ids of removed jobs are never given again.
func (tx *Tx) LastJobID(ctx context.Context) (int64, error) {
	id, err := tx.drv.lastJobID(ctx, tx)
	if err != nil {
		return 0, fmt.Errorf("last job id: %w", err)
	}
	return id, nil
}
