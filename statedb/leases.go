package statedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Lease is the lease of a kind of periodic work: the process that does it
// (Owner) until Expires, since Taken, in Unix seconds.
type Lease struct {
	Kind    string
	Owner   string
	Taken   int64
	Expires int64
}

// leaseSeconds is term in whole seconds, rounded up, as leases are kept.
func leaseSeconds(term time.Duration) int64 {
	return int64((term + time.Second - 1) / time.Second)
}

// TakeLease takes the lease of kind for owner until term from now, and
// says whether owner holds it: it is taken when no one holds it or its
// holder's term has run out, and renewed (its expiry moved on) when owner
// holds it already. It is false, and nothing changes, while another owner
// holds it. The rule is the one statement's: any number of processes may
// ask at once and one of them gets it. owner must name the process
// uniquely (say its host, pid and a random part), and a holder renews
// well within term, so that slow work never outlives its lease.
func (tx *Tx) TakeLease(ctx context.Context, kind, owner string, term time.Duration) (bool, error) {
	if kind == "" || owner == "" {
		return false, fmt.Errorf("take lease %q for %q: kind and owner must be named: %w", kind, owner, ErrInvalid)
	}
	secs := leaseSeconds(term)
	if secs <= 0 {
		return false, fmt.Errorf("take lease %q: term %s: %w", kind, term, ErrInvalid)
	}
	res, err := tx.exec(ctx, `INSERT INTO leases (kind, owner, taken, expires) VALUES (?1, ?2, ?3, ?4)
		ON CONFLICT (kind) DO UPDATE SET owner = excluded.owner, expires = excluded.expires,
			taken = CASE WHEN leases.owner = excluded.owner THEN leases.taken ELSE excluded.taken END
		WHERE leases.owner = excluded.owner OR leases.expires <= ?3`,
		kind, owner, tx.Now, tx.Now+secs)
	if err != nil {
		return false, fmt.Errorf("take lease %q for %q: %w", kind, owner, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("take lease %q for %q: %w", kind, owner, err)
	}
	return n > 0, nil
}

// ReleaseLease gives up owner's lease of kind, so that another process
// may take it at once rather than when it expires. Releasing a lease no
// one holds does nothing; releasing one that another owner holds now (the
// term ran out and it was taken) is ErrTaken.
func (tx *Tx) ReleaseLease(ctx context.Context, kind, owner string) error {
	res, err := tx.exec(ctx, `DELETE FROM leases WHERE kind = ? AND owner = ?`, kind, owner)
	if err != nil {
		return fmt.Errorf("release lease %q of %q: %w", kind, owner, err)
	}
	if n, err := res.RowsAffected(); err != nil || n > 0 {
		return err
	}
	l, err := tx.Lease(ctx, kind)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("release lease %q of %q: %s holds it: %w", kind, owner, l.Owner, ErrTaken)
}

// Lease returns the lease of kind, expired or not; ErrNotFound if no one
// has taken it or it was released.
func (tx *Tx) Lease(ctx context.Context, kind string) (Lease, error) {
	l := Lease{Kind: kind}
	err := tx.queryRow(ctx, `SELECT owner, taken, expires FROM leases WHERE kind = ?`, kind).Scan(&l.Owner, &l.Taken, &l.Expires)
	if errors.Is(err, sql.ErrNoRows) {
		return l, fmt.Errorf("no lease %q: %w", kind, ErrNotFound)
	}
	if err != nil {
		return l, fmt.Errorf("read lease %q: %w", kind, err)
	}
	return l, nil
}

// Leases lists the leases by kind, expired ones included.
func (tx *Tx) Leases(ctx context.Context) ([]Lease, error) {
	rows, err := tx.query(ctx, `SELECT kind, owner, taken, expires FROM leases ORDER BY kind`)
	if err != nil {
		return nil, fmt.Errorf("list leases: %w", err)
	}
	defer rows.Close()
	out := []Lease{}
	for rows.Next() {
		var l Lease
		if err := rows.Scan(&l.Kind, &l.Owner, &l.Taken, &l.Expires); err != nil {
			return nil, fmt.Errorf("list leases: %w", err)
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

// TakeLease is Tx.TakeLease in a write transaction of its own, for a loop
// that holds no transaction.
func (db *DB) TakeLease(ctx context.Context, kind, owner string, term time.Duration) (bool, error) {
	var ok bool
	err := db.Update(ctx, func(tx *Tx) error {
		var err error
		ok, err = tx.TakeLease(ctx, kind, owner, term)
		return err
	})
	return ok, err
}

// ReleaseLease is Tx.ReleaseLease in a write transaction of its own.
func (db *DB) ReleaseLease(ctx context.Context, kind, owner string) error {
	return db.Update(ctx, func(tx *Tx) error { return tx.ReleaseLease(ctx, kind, owner) })
}
