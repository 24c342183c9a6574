package statedb

import (
	"context"
	"fmt"
)

// RuntimeIs says whether id is a tree of the runtime named name: a runtime
// section of the configuration in use, the runtime of a scraper in the run
// queue, or the one handed out with a job still remembered, so that a
// minion can fetch what it was handed after CONFGIT moved on.
func (tx *Tx) RuntimeIs(ctx context.Context, name, id string) (bool, error) {
	c, err := tx.ConfigState(ctx)
	if err != nil {
		return false, err
	}
	for _, rt := range c.Runtimes {
		if rt.Name == name && rt.ID == id {
			return true, nil
		}
	}
	// Runtime archives are fetched once per build, so a scan of the
	// lorries and jobs costs little beside the archive itself.
	var known bool
	err = tx.queryRow(ctx, `SELECT EXISTS (SELECT 1 FROM lorries WHERE runtime_id = $1 AND runtime_name = $2)
		OR EXISTS (SELECT 1 FROM jobs WHERE runtime_id = $3 AND runtime_name = $4)`,
		id, name, id, name).Scan(&known)
	if err != nil {
		return false, fmt.Errorf("look up runtime %s %s: %w", name, id, err)
	}
	return known, nil
}
