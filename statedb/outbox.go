package statedb

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"lorrycontroller.dev/lc/wire"
)

// The events a notification can be about. Their payloads are the types
// below; docs/operations.md shows them as the receiver sees them.
const (
	EventJobFailed         = "job-failed"
	EventLorryHardFailed   = "lorry-hard-failed"
	EventLorryRecovered    = "lorry-recovered"
	EventRefsChanged       = "refs-changed"
	EventHostListingFailed = "host-listing-failed"
)

// Events are all the events, in the order the documentation gives them.
var Events = []string{EventJobFailed, EventLorryHardFailed, EventLorryRecovered, EventRefsChanged, EventHostListingFailed}

// JobFailed is the payload of job-failed: a job ended other than
// successfully, whether by its own exit, a kill, a lorry-timeout, a lost
// minion, or a downstream repository that could not be prepared.
type JobFailed struct {
	Lorry  string `json:"lorry"`
	JobID  int64  `json:"job_id"`
	Kind   string `json:"kind"`
	Status string `json:"status"`
	// Exit is null when the job never reported one (lost, not prepared).
	Exit   *int64 `json:"exit"`
	Minion string `json:"minion"`
	// Error is the lorry's last_run_error: what ended the job and the
	// tail of its output.
	Error string `json:"error"`
	// ErrorClass is the job's error class; "" when unknown.
	ErrorClass string `json:"error_class"`
}

// LorryHardFailed is the payload of lorry-hard-failed: a lorry failed so
// many times in a row that it is no longer retried by itself.
type LorryHardFailed struct {
	Lorry    string `json:"lorry"`
	JobID    int64  `json:"job_id"`
	Failures int64  `json:"failures"`
	Error    string `json:"error"`
	// ErrorClass is the error class of the last failure.
	ErrorClass string `json:"error_class"`
}

// LorryRecovered is the payload of lorry-recovered: a lorry succeeded
// after Failures failed runs in a row.
type LorryRecovered struct {
	Lorry    string `json:"lorry"`
	JobID    int64  `json:"job_id"`
	Failures int64  `json:"failures"`
}

// RefsChanged is the payload of refs-changed: a successful job moved refs
// of its lorry's mirror downstream.
type RefsChanged struct {
	Lorry string           `json:"lorry"`
	JobID int64            `json:"job_id"`
	Refs  *wire.RefChanges `json:"refs"`
}

// HostListingFailed is the payload of host-listing-failed: listing an
// Upstream Host failed, so its lorries stay as they were.
type HostListingFailed struct {
	Host  string `json:"host"`
	Error string `json:"error"`
}

// Notify puts a notification of event with payload (one of the payload
// types above) into the outbox, as part of the transaction, if the
// database was opened to notify of that event (Options.Notify); else it
// does nothing. The delivery happens later, elsewhere: this is one INSERT.
func (tx *Tx) Notify(ctx context.Context, event string, payload any) error {
	if !slices.Contains(Events, event) {
		return fmt.Errorf("notify: unknown event %q: %w", event, ErrInvalid)
	}
	if !tx.notify[event] {
		return nil
	}
	body, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("notify %s: %w", event, err)
	}
	if len(body) < 2 || body[0] != '{' {
		return fmt.Errorf("notify %s: the payload is not a JSON object: %w", event, ErrInvalid)
	}
	_, err = tx.exec(ctx, `INSERT INTO outbox (event, payload, created, next_try) VALUES ($1, $2, $3, $4)`,
		event, string(body), tx.Now, tx.Now)
	if err != nil {
		return fmt.Errorf("notify %s: %w", event, err)
	}
	return nil
}

// Delivery states.
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed"
)

// Delivery is one notification in the outbox and how its delivery went.
type Delivery struct {
	ID      int64
	Event   string
	Payload string // a JSON object
	Created int64
	Status  string
	// Attempts counts the POSTs made so far.
	Attempts int64
	// NextTry is when a pending delivery is tried next.
	NextTry int64
	LastTry *int64
	// LastCode is the receiver's last HTTP status; nil if it never
	// answered.
	LastCode *int64
	// LastError says why the last attempt failed; "" if it did not.
	LastError string
}

const deliveryColumns = `id, event, payload, created, status, attempts, next_try, last_try, last_code, last_error`

func scanDeliveries(rows *sql.Rows, err error) ([]Delivery, error) {
	if err != nil {
		return nil, fmt.Errorf("read outbox: %w", err)
	}
	defer rows.Close()
	out := []Delivery{}
	for rows.Next() {
		var d Delivery
		var last, code sql.NullInt64
		if err := rows.Scan(&d.ID, &d.Event, &d.Payload, &d.Created, &d.Status, &d.Attempts,
			&d.NextTry, &last, &code, &d.LastError); err != nil {
			return nil, fmt.Errorf("read outbox: %w", err)
		}
		d.LastTry, d.LastCode = nullInt(last), nullInt(code)
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read outbox: %w", err)
	}
	return out, nil
}

// DueDeliveries lists up to limit pending deliveries whose time has come,
// oldest first, claimed or not.
func (tx *Tx) DueDeliveries(ctx context.Context, limit int) ([]Delivery, error) {
	return scanDeliveries(tx.query(ctx, tx.q.dueDeliveries, tx.Now, limit))
}

// ClaimDeliveries claims for owner, until term from now, up to limit
// pending deliveries whose time has come and that no other deliverer
// holds a claim on (none was made, or it ran out), and returns them
// oldest first. A deliverer POSTs only what it claimed, and records each
// attempt under its claim (DeliveryAttempt.Owner), so that two deliverers
// sharing the database never deliver one notification at once; one that
// dies leaves its claims to run out. The claim is the one statement's, so
// any number may claim at once.
func (tx *Tx) ClaimDeliveries(ctx context.Context, owner string, term time.Duration, limit int) ([]Delivery, error) {
	secs := leaseSeconds(term)
	if owner == "" || secs <= 0 {
		return nil, fmt.Errorf("claim deliveries for %q for %s: %w", owner, term, ErrInvalid)
	}
	ds, err := scanDeliveries(tx.query(ctx, tx.q.claimDeliveries, owner, tx.Now+secs, tx.Now, limit))
	slices.SortFunc(ds, func(a, b Delivery) int {
		return cmp.Or(cmp.Compare(a.NextTry, b.NextTry), cmp.Compare(a.ID, b.ID))
	})
	return ds, err
}

// Deliveries lists the newest limit deliveries, newest first.
func (tx *Tx) Deliveries(ctx context.Context, limit int) ([]Delivery, error) {
	return scanDeliveries(tx.query(ctx, `SELECT `+deliveryColumns+` FROM outbox ORDER BY id DESC LIMIT $1`, limit))
}

// DeliveryCounts counts the deliveries by status.
func (tx *Tx) DeliveryCounts(ctx context.Context) (map[string]int64, error) {
	out := map[string]int64{}
	return out, tx.countBy(ctx, out, "deliveries", `SELECT status, COUNT(*) FROM outbox GROUP BY status`)
}

// DeliveryAttempt is the outcome of one POST of a delivery.
type DeliveryAttempt struct {
	// Status is the delivery's state after the attempt: delivered, pending
	// again (to be tried at NextTry), or failed for good.
	Status  string
	NextTry int64
	// Code is the receiver's HTTP status, 0 if it did not answer.
	Code  int
	Error string
	// Owner is the claim the attempt was made under (ClaimDeliveries).
	// The delivery must be claimed by Owner, or by no one whose claim
	// is still running; "" is an attempt made under no claim.
	Owner string
}

// RecordDelivery records an attempt to deliver notification id, made now.
func (tx *Tx) RecordDelivery(ctx context.Context, id int64, a DeliveryAttempt) error {
	if !slices.Contains([]string{DeliveryPending, DeliveryDelivered, DeliveryFailed}, a.Status) {
		return fmt.Errorf("record delivery %d: status %q: %w", id, a.Status, ErrInvalid)
	}
	var code *int
	if a.Code != 0 {
		code = &a.Code
	}
	res, err := tx.exec(ctx, `UPDATE outbox SET status = $1, attempts = attempts + 1, next_try = $2,
			last_try = $3, last_code = $4, last_error = $5, claimed_by = '', claimed_until = 0
		WHERE id = $6 AND status = 'pending' AND (claimed_by = $7 OR claimed_until <= $3)`,
		a.Status, a.NextTry, tx.Now, code, a.Error, id, a.Owner)
	if err != nil {
		return fmt.Errorf("record delivery %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n > 0 {
		return nil
	}
	var by string
	err = tx.queryRow(ctx, `SELECT claimed_by FROM outbox WHERE id = $1 AND status = 'pending'`, id).Scan(&by)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("no pending delivery %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("record delivery %d: %w", id, err)
	}
	return fmt.Errorf("record delivery %d for %q: %q claims it: %w", id, a.Owner, by, ErrTaken)
}

// RemoveOldDeliveries forgets the deliveries that were delivered or given
// up more than maxAge seconds ago, so that the outbox stays small.
func (tx *Tx) RemoveOldDeliveries(ctx context.Context, maxAge int64) (int64, error) {
	res, err := tx.exec(ctx, `DELETE FROM outbox WHERE status != 'pending' AND last_try < $1`, tx.Now-maxAge)
	if err != nil {
		return 0, fmt.Errorf("remove old deliveries: %w", err)
	}
	return res.RowsAffected()
}
