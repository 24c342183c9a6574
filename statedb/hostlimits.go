package statedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// HostMaxJobs is the cap on jobs running at once on the minion host
// named; nil is no cap.
func (tx *Tx) HostMaxJobs(ctx context.Context, host string) (*int64, error) {
	var n int64
	err := tx.queryRow(ctx, `SELECT max_jobs FROM host_limits WHERE host = $1`, host).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read max_jobs of host %s: %w", host, err)
	}
	return &n, nil
}

// SetHostMaxJobs caps the jobs running at once on the minion host named,
// however many minions run there; nil removes the cap.
func (tx *Tx) SetHostMaxJobs(ctx context.Context, host string, n *int64) error {
	if host == "" {
		return fmt.Errorf("no host named: %w", ErrInvalid)
	}
	if n == nil {
		if _, err := tx.exec(ctx, `DELETE FROM host_limits WHERE host = $1`, host); err != nil {
			return fmt.Errorf("remove max_jobs of host %s: %w", host, err)
		}
		return nil
	}
	if *n < 0 {
		return fmt.Errorf("max_jobs %d is negative: %w", *n, ErrInvalid)
	}
	_, err := tx.exec(ctx, `INSERT INTO host_limits (host, max_jobs) VALUES ($1, $2)
		ON CONFLICT (host) DO UPDATE SET max_jobs = excluded.max_jobs`, host, *n)
	if err != nil {
		return fmt.Errorf("write max_jobs of host %s: %w", host, err)
	}
	return nil
}

// HostLimits lists the capped minion hosts and their caps.
func (tx *Tx) HostLimits(ctx context.Context) (map[string]int64, error) {
	rows, err := tx.query(ctx, `SELECT host, max_jobs FROM host_limits ORDER BY host`)
	if err != nil {
		return nil, fmt.Errorf("list host limits: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var h string
		var n int64
		if err := rows.Scan(&h, &n); err != nil {
			return nil, fmt.Errorf("list host limits: %w", err)
		}
		out[h] = n
	}
	return out, rows.Err()
}
