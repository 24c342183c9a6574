package statedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Minion is a worker process as last seen by the WEBAPP.
type Minion struct {
	Name     string
	Host     string
	PID      int64
	LastSeen int64
	JobID    *int64
	// Heard counts the requests of its current process (host and pid).
	Heard int64
	// Retire says whether it is retired, and Kill whether its job is
	// killed rather than finished first.
	Retire, Kill bool
}

// touchMinion records that minion m was heard from now, and which job it
// has (nil: none).
func (tx *Tx) touchMinion(ctx context.Context, m MinionID, job *int64) error {
	_, err := tx.exec(ctx, `INSERT INTO minions (name, host, pid, last_seen, job_id) VALUES ($1, $2, $3, $4, $5)`+minionSeen,
		m.Name, m.Host, m.PID, tx.Now, job)
	if err != nil {
		return fmt.Errorf("record minion %s: %w", m.Name, err)
	}
	return nil
}

// minionSeen ends the insert of a minion's row that records it seen,
// whether or not it has one.
const minionSeen = `
	ON CONFLICT (name) DO UPDATE SET host = excluded.host, pid = excluded.pid,
		last_seen = excluded.last_seen, job_id = excluded.job_id,
		heard = CASE WHEN minions.host = excluded.host AND minions.pid = excluded.pid
			THEN minions.heard + 1 ELSE 1 END`

// Minions lists the minions ever heard from, by name.
func (tx *Tx) Minions(ctx context.Context) ([]Minion, error) {
	rows, err := tx.query(ctx, `SELECT name, host, pid, last_seen, job_id, heard, retire FROM minions ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list minions: %w", err)
	}
	defer rows.Close()
	out := []Minion{}
	for rows.Next() {
		var m Minion
		var job sql.NullInt64
		var retire int
		if err := rows.Scan(&m.Name, &m.Host, &m.PID, &m.LastSeen, &job, &m.Heard, &retire); err != nil {
			return nil, fmt.Errorf("list minions: %w", err)
		}
		m.JobID = nullInt(job)
		m.Retire, m.Kill = retire != retireNo, retire == retireKill
		out = append(out, m)
	}
	return out, rows.Err()
}

// Values of minions.retire.
const (
	retireNo = iota
	retireFinish
	retireKill
)

// RetireMinion retires the minion called name, or un-retires it: a
// retired minion is told, at its next request and at every one after, to
// finish its job (or, with kill, to kill it) and exit. With kill, its live
// job is stopped as stop-job does. A name never heard from is recorded,
// so that a minion yet to start is retired too. ErrInvalid for an empty
// name.
func (tx *Tx) RetireMinion(ctx context.Context, name string, retire, kill bool) error {
	if name == "" {
		return fmt.Errorf("no minion named: %w", ErrInvalid)
	}
	v := retireNo
	switch {
	case retire && kill:
		v = retireKill
	case retire:
		v = retireFinish
	}
	_, err := tx.exec(ctx, `INSERT INTO minions (name, host, pid, last_seen, heard, retire) VALUES ($1, '', 0, 0, 0, $2)
		ON CONFLICT (name) DO UPDATE SET retire = excluded.retire`, name, v)
	if err != nil {
		return fmt.Errorf("retire minion %s: %w", name, err)
	}
	if v != retireKill {
		return nil
	}
	_, err = tx.exec(ctx, `UPDATE jobs SET kill = 1, kill_reason = $1 WHERE minion = $2 AND `+liveStatus+` AND kill = 0`,
		StatusKilled, name)
	if err != nil {
		return fmt.Errorf("kill the job of minion %s: %w", name, err)
	}
	return nil
}

// MinionRetired says whether the minion called name is retired, and
// whether its job is to be killed. A name never heard from is not.
func (tx *Tx) MinionRetired(ctx context.Context, name string) (retire, kill bool, err error) {
	var v int
	err = tx.queryRow(ctx, `SELECT retire FROM minions WHERE name = $1`, name).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return false, false, nil
	}
	if err != nil {
		return false, false, fmt.Errorf("read minion %s: %w", name, err)
	}
	return v != retireNo, v == retireKill, nil
}

// TouchRetiredMinion records that the retired minion m asked for work
// and was told to exit: it is seen, and gets nothing.
func (tx *Tx) TouchRetiredMinion(ctx context.Context, m MinionID) error {
	var job *int64
	var id sql.NullInt64
	err := tx.queryRow(ctx, `SELECT job_id FROM minions WHERE name = $1`, m.Name).Scan(&id)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("read minion %s: %w", m.Name, err)
	}
	job = nullInt(id)
	return tx.touchMinion(ctx, m, job)
}
