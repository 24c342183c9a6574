package statedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Lease is the lease of a kind of periodic work: the process that does it
// (Owner) until Expires, since Taken, in Unix seconds of the database's
// clock (see SyncClock). Token is its fencing token, one more at each
// take by a process that did not hold it: the work done under the lease
// names it in each of its transactions (CheckLease), so that a process
// that held it once, was frozen past its term and woke writes nothing
// under it once another has taken it.
type Lease struct {
	Kind    string
	Owner   string
	Token   int64
	Taken   int64
	Expires int64
}

// leaseSeconds is term in whole seconds, rounded up, as leases are kept.
func leaseSeconds(term time.Duration) int64 {
	return int64((term + time.Second - 1) / time.Second)
}

// TakeLease takes the lease of kind for owner until term from now, and
// says whether owner holds it: it is taken when no one holds it or its
// holder's term has run out, and renewed (its expiry moved on, its token
// kept) when owner holds it already. It is false, and nothing changes,
// while another owner holds it. The rule is the one statement's: any
// number of processes may ask at once and one of them gets it. owner must
// name the process uniquely (say its host, pid and a random part).
//
// A lease is taken only in a write transaction, which on every backend
// runs alone (the write lock), so that no take falls between the check
// of a transaction under the lease (CheckLease) and its commit.
func (tx *Tx) TakeLease(ctx context.Context, kind, owner string, term time.Duration) (Lease, bool, error) {
	l := Lease{Kind: kind, Owner: owner}
	if kind == "" || owner == "" {
		return l, false, fmt.Errorf("take lease %q for %q: kind and owner must be named: %w", kind, owner, ErrInvalid)
	}
	secs := leaseSeconds(term)
	if secs <= 0 {
		return l, false, fmt.Errorf("take lease %q: term %s: %w", kind, term, ErrInvalid)
	}
	// The owner's own lease, unexpired, keeps its token and the time it
	// was taken; any other take is a new holding.
	err := tx.queryRow(ctx, `INSERT INTO leases (kind, owner, token, taken, expires) VALUES ($1, $2, 1, $3, $4)
		ON CONFLICT (kind) DO UPDATE SET owner = excluded.owner, expires = excluded.expires,
			token = CASE WHEN leases.owner = excluded.owner AND leases.expires > $3 THEN leases.token ELSE leases.token + 1 END,
			taken = CASE WHEN leases.owner = excluded.owner AND leases.expires > $3 THEN leases.taken ELSE excluded.taken END
		WHERE leases.owner = excluded.owner OR leases.expires <= $3
		RETURNING token, taken, expires`,
		kind, owner, tx.Now, tx.Now+secs).Scan(&l.Token, &l.Taken, &l.Expires)
	if errors.Is(err, sql.ErrNoRows) {
		return l, false, nil
	}
	if err != nil {
		return l, false, fmt.Errorf("take lease %q for %q: %w", kind, owner, err)
	}
	return l, true, nil
}

// CheckLease is the fence of a transaction made under the lease l, as
// TakeLease gave it: ErrTaken unless l's owner holds the lease of its
// kind still under l's token, that is unless no one took it since. A
// lease whose term ran out while its holder was frozen, and that no one
// took meanwhile, is still its holder's: no other process did its work.
//
// It reads the lease and locks nothing, so that the renewals of the same
// lease (RenewLease) never wait behind the transactions of its work;
// the write lock that tx holds keeps every take out until it commits.
func (tx *Tx) CheckLease(ctx context.Context, l Lease) error {
	var n int
	err := tx.queryRow(ctx, `SELECT COUNT(*) FROM leases WHERE kind = $1 AND owner = $2 AND token = $3`,
		l.Kind, l.Owner, l.Token).Scan(&n)
	if err != nil {
		return fmt.Errorf("check lease %q of %q: %w", l.Kind, l.Owner, err)
	}
	if n == 0 {
		return fmt.Errorf("the lease of %s taken by %s (token %d) is no longer its: %w", l.Kind, l.Owner, l.Token, ErrTaken)
	}
	return nil
}

// renewLease moves the expiry of the lease l, held under its token, to
// term from now; ErrTaken if another took it since.
func (tx *Tx) renewLease(ctx context.Context, l Lease, term time.Duration) error {
	secs := leaseSeconds(term)
	if secs <= 0 {
		return fmt.Errorf("renew lease %q: term %s: %w", l.Kind, term, ErrInvalid)
	}
	res, err := tx.exec(ctx, `UPDATE leases SET expires = $1 WHERE kind = $2 AND owner = $3 AND token = $4`,
		tx.Now+secs, l.Kind, l.Owner, l.Token)
	if err != nil {
		return fmt.Errorf("renew lease %q of %q: %w", l.Kind, l.Owner, err)
	}
	return taken(res, fmt.Sprintf("renew lease %q of %q (token %d)", l.Kind, l.Owner, l.Token))
}

// ReleaseLease gives up the lease l, so that another process may take it
// at once rather than when it expires. The row stays, with no owner, so
// that the next take counts its token on. Releasing a lease no one holds
// does nothing; releasing one that another took since is ErrTaken.
func (tx *Tx) ReleaseLease(ctx context.Context, l Lease) error {
	res, err := tx.exec(ctx, `UPDATE leases SET owner = '', expires = 0 WHERE kind = $1 AND owner = $2 AND token = $3`,
		l.Kind, l.Owner, l.Token)
	if err != nil {
		return fmt.Errorf("release lease %q of %q: %w", l.Kind, l.Owner, err)
	}
	if n, err := res.RowsAffected(); err != nil || n > 0 {
		return err
	}
	cur, err := tx.Lease(ctx, l.Kind)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("release lease %q of %q: %s holds it: %w", l.Kind, l.Owner, cur.Owner, ErrTaken)
}

// Lease returns the lease of kind, expired or not; ErrNotFound if no one
// has taken it or it was released.
func (tx *Tx) Lease(ctx context.Context, kind string) (Lease, error) {
	l := Lease{Kind: kind}
	err := tx.queryRow(ctx, `SELECT owner, token, taken, expires FROM leases WHERE kind = $1 AND owner != ''`,
		kind).Scan(&l.Owner, &l.Token, &l.Taken, &l.Expires)
	if errors.Is(err, sql.ErrNoRows) {
		return l, fmt.Errorf("no lease %q: %w", kind, ErrNotFound)
	}
	if err != nil {
		return l, fmt.Errorf("read lease %q: %w", kind, err)
	}
	return l, nil
}

// Leases lists the leases held by kind, expired ones included.
func (tx *Tx) Leases(ctx context.Context) ([]Lease, error) {
	rows, err := tx.query(ctx, `SELECT kind, owner, token, taken, expires FROM leases WHERE owner != '' ORDER BY kind`)
	if err != nil {
		return nil, fmt.Errorf("list leases: %w", err)
	}
	defer rows.Close()
	out := []Lease{}
	for rows.Next() {
		var l Lease
		if err := rows.Scan(&l.Kind, &l.Owner, &l.Token, &l.Taken, &l.Expires); err != nil {
			return nil, fmt.Errorf("list leases: %w", err)
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

// TakeLease is Tx.TakeLease in a write transaction of its own, for a loop
// that holds no transaction.
func (db *DB) TakeLease(ctx context.Context, kind, owner string, term time.Duration) (Lease, bool, error) {
	var l Lease
	var ok bool
	err := db.Update(ctx, func(tx *Tx) error {
		var err error
		l, ok, err = tx.TakeLease(ctx, kind, owner, term)
		return err
	})
	return l, ok, err
}

// RenewLease moves the expiry of the lease l, which its holder took
// (TakeLease) and holds under its token, to term from now; ErrTaken if
// another process took it since. The renewal never waits behind the
// transactions of the lease's own work: on PostgreSQL it runs on a
// session of its own and takes no write lock (the lease's row is all it
// writes, and it changes neither its owner nor its token, which is what
// the work's transactions check); on SQLite, where one writer at a time
// holds the whole database, it waits on the write session for the
// transaction under way, one at most, as the work's own do.
func (db *DB) RenewLease(ctx context.Context, l Lease, term time.Duration) error {
	fn := func(tx *Tx) error { return tx.renewLease(ctx, l, term) }
	if db.leases == nil {
		return db.Update(ctx, fn)
	}
	db.leases.mu.Lock()
	defer db.leases.mu.Unlock()
	return db.runTx(ctx, db.leases, fn)
}

// ReleaseLease is Tx.ReleaseLease in a write transaction of its own.
func (db *DB) ReleaseLease(ctx context.Context, l Lease) error {
	return db.Update(ctx, func(tx *Tx) error { return tx.ReleaseLease(ctx, l) })
}
