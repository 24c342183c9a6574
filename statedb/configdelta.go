package statedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// The reads and writes of a configuration applied as a change of the one
// before (control's delta read): only the lorries of the .lorry files
// that changed are looked at.

// LorryFiles answers, of paths, those that are configuration lorries (not
// generated), with the file that defines each.
func (tx *Tx) LorryFiles(ctx context.Context, paths []string) (map[string]string, error) {
	out := map[string]string{}
	for _, p := range paths {
		var from string
		err := tx.queryRow(ctx, `SELECT from_path FROM lorries WHERE path = $1 AND generated = 0`, p).Scan(&from)
		if err == nil {
			out[p] = from
		} else if !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("read lorry %q: %w", p, err)
		}
	}
	return out, nil
}

// RemoveUnseenPaths removes, of paths, the configuration lorries that the
// configuration applied since BeginConfigLorries does not define nor
// keep, and answers how many. A running job of one is left to finish, as
// RemoveUnseenLorries leaves it.
func (tx *Tx) RemoveUnseenPaths(ctx context.Context, paths []string) (int, error) {
	if err := tx.flushStaged(ctx); err != nil {
		return 0, err
	}
	n := 0
	for _, p := range paths {
		res, err := tx.exec(ctx, `DELETE FROM lorries WHERE path = $1 AND generated = 0
			AND NOT EXISTS (SELECT 1 FROM config_seen AS s WHERE s.path = lorries.path)`, p)
		if err != nil {
			return n, fmt.Errorf("remove lorry %q: %w", p, err)
		}
		k, err := res.RowsAffected()
		if err != nil {
			return n, err
		}
		n += int(k)
	}
	return n, nil
}
