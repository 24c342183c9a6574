package statedb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"lorrycontroller.dev/lc/wire"
)

// JobRefs returns the ref changes of job id. ErrNotFound: none were
// recorded, as for a job that failed, ran no lorry, or whose minion did
// not report them.
func (tx *Tx) JobRefs(ctx context.Context, id int64) (*wire.RefChanges, error) {
	var data string
	err := tx.queryRow(ctx, `SELECT refs FROM job_refs WHERE job_id = $1`, id).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("no ref changes of job %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read ref changes of job %d: %w", id, err)
	}
	var c wire.RefChanges
	if err := json.Unmarshal([]byte(data), &c); err != nil {
		return nil, fmt.Errorf("read ref changes of job %d: %w", id, err)
	}
	return &c, nil
}

func (tx *Tx) setJobRefs(ctx context.Context, id int64, c *wire.RefChanges) error {
	data, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("record ref changes of job %d: %w", id, err)
	}
	if _, err := tx.exec(ctx, `INSERT INTO job_refs (job_id, refs) VALUES ($1, $2)
		ON CONFLICT (job_id) DO UPDATE SET refs = excluded.refs`, id, string(data)); err != nil {
		return fmt.Errorf("record ref changes of job %d: %w", id, err)
	}
	return nil
}
