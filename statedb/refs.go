package statedb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// RefChanges are the refs a successful job created, updated and deleted
// downstream. Its JSON form is the one stored.
type RefChanges struct {
	Created []RefChange `json:"created"`
	Updated []RefChange `json:"updated"`
	Deleted []RefChange `json:"deleted"`
	// Truncated says that lorry cut a list short.
	Truncated bool `json:"truncated"`
}

// Any says whether any ref changed.
func (c *RefChanges) Any() bool {
	return c != nil && len(c.Created)+len(c.Updated)+len(c.Deleted) > 0
}

// RefChange is one ref: Old is "" for a created ref, New "" for a deleted
// one.
type RefChange struct {
	Ref string `json:"ref"`
	Old string `json:"old,omitempty"`
	New string `json:"new,omitempty"`
}

// JobRefs returns the ref changes of job id. ErrNotFound: none were
// recorded, as for a job that failed, ran no lorry, or whose minion did
// not report them.
func (tx *Tx) JobRefs(ctx context.Context, id int64) (*RefChanges, error) {
	var data string
	err := tx.queryRow(ctx, `SELECT refs FROM job_refs WHERE job_id = ?`, id).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("no ref changes of job %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read ref changes of job %d: %w", id, err)
	}
	var c RefChanges
	if err := json.Unmarshal([]byte(data), &c); err != nil {
		return nil, fmt.Errorf("read ref changes of job %d: %w", id, err)
	}
	return &c, nil
}

func (tx *Tx) setJobRefs(ctx context.Context, id int64, c *RefChanges) error {
	data, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("record ref changes of job %d: %w", id, err)
	}
	if _, err := tx.exec(ctx, `INSERT OR REPLACE INTO job_refs (job_id, refs) VALUES (?, ?)`, id, string(data)); err != nil {
		return fmt.Errorf("record ref changes of job %d: %w", id, err)
	}
	return nil
}
