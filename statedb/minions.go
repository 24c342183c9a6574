package statedb

import (
	"context"
	"database/sql"
	"fmt"
)

// Minion is a worker process as last seen by the WEBAPP.
type Minion struct {
	Name     string
	Host     string
	PID      int64
	LastSeen int64
	JobID    *int64
}

// touchMinion records that minion m was heard from now, and which job it
// has (nil: none).
func (tx *Tx) touchMinion(ctx context.Context, m MinionID, job *int64) error {
	_, err := tx.exec(ctx, `INSERT INTO minions (name, host, pid, last_seen, job_id) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET host = excluded.host, pid = excluded.pid,
			last_seen = excluded.last_seen, job_id = excluded.job_id`,
		m.Name, m.Host, m.PID, tx.Now, job)
	if err != nil {
		return fmt.Errorf("record minion %s: %w", m.Name, err)
	}
	return nil
}

// Minions lists the minions ever heard from, by name.
func (tx *Tx) Minions(ctx context.Context) ([]Minion, error) {
	rows, err := tx.query(ctx, `SELECT name, host, pid, last_seen, job_id FROM minions ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list minions: %w", err)
	}
	defer rows.Close()
	out := []Minion{}
	for rows.Next() {
		var m Minion
		var job sql.NullInt64
		if err := rows.Scan(&m.Name, &m.Host, &m.PID, &m.LastSeen, &job); err != nil {
			return nil, fmt.Errorf("list minions: %w", err)
		}
		m.JobID = nullInt(job)
		out = append(out, m)
	}
	return out, rows.Err()
}
