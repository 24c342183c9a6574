package routes

import (
	"errors"
	"net/http"

	"lorrycontroller.dev/lc/statedb"
	"lorrycontroller.dev/lc/wire"
)

// jobRefs reads the ref changes of job id: nil when none were recorded.
func jobRefs(tx *statedb.Tx, r *http.Request, id int64) (*wire.RefChanges, error) {
	c, err := tx.JobRefs(r.Context(), id)
	if errors.Is(err, statedb.ErrNotFound) {
		return nil, nil
	}
	return c, err
}
