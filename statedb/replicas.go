package statedb

import (
	"context"
	"fmt"
)

// Replica is a WEBAPP process sharing the database, as it last said.
type Replica struct {
	Name     string
	URL      string
	Owner    string // the owner its leases are taken under
	Started  int64
	LastSeen int64
	// Leases are the kinds of work whose lease it holds now.
	Leases []string
}

// SeeReplica records that replica r is alive now. A replica that starts
// again under its name takes its row over.
func (tx *Tx) SeeReplica(ctx context.Context, r Replica) error {
	_, err := tx.exec(ctx, `INSERT INTO replicas (name, url, owner, started, last_seen) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (name) DO UPDATE SET url = excluded.url, last_seen = excluded.last_seen,
			started = CASE WHEN replicas.owner = excluded.owner THEN replicas.started ELSE excluded.started END,
			owner = excluded.owner`, r.Name, r.URL, r.Owner, r.Started, tx.Now)
	if err != nil {
		return fmt.Errorf("record replica %q: %w", r.Name, err)
	}
	return nil
}

// ForgetReplicas forgets the replicas not seen since before.
func (tx *Tx) ForgetReplicas(ctx context.Context, before int64) error {
	if _, err := tx.exec(ctx, `DELETE FROM replicas WHERE last_seen < $1`, before); err != nil {
		return fmt.Errorf("forget replicas: %w", err)
	}
	return nil
}

// Replicas lists the replicas by name, each with the leases it holds.
func (tx *Tx) Replicas(ctx context.Context) ([]Replica, error) {
	rows, err := tx.query(ctx, `SELECT name, url, owner, started, last_seen FROM replicas ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list replicas: %w", err)
	}
	var list []Replica
	for rows.Next() {
		var r Replica
		if err := rows.Scan(&r.Name, &r.URL, &r.Owner, &r.Started, &r.LastSeen); err != nil {
			rows.Close()
			return nil, fmt.Errorf("list replicas: %w", err)
		}
		list = append(list, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list replicas: %w", err)
	}
	leases, err := tx.Leases(ctx)
	if err != nil {
		return nil, err
	}
	for i := range list {
		list[i].Leases = []string{}
		for _, l := range leases {
			if l.Owner == list[i].Owner && l.Expires > tx.Now {
				list[i].Leases = append(list[i].Leases, l.Kind)
			}
		}
	}
	return list, nil
}
