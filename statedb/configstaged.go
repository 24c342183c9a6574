package statedb

import (
	"context"
	"encoding/json"
	"fmt"
)

// A configuration applied to an empty run queue (the first read of a
// new database) is staged: AddConfigLorries puts each batch
// into config_staged, a table without indexes, without looking up the
// lorries that cannot be there, and the first step after the last batch
// (KeepConfigLorries, RemoveUnseenLorries, RemoveUnseenPaths,
// CompleteConfigLorries or EndConfigLorries) puts them all into lorries
// in one transaction. Added batch by batch, a transaction each, every
// commit wrote again the last pages of each of the dozen indexes of
// lorries; in one, each page is written once. Readers meanwhile see the
// run queue as it was, empty, and then every lorry of the configuration
// at once.
//
// The indexes stay while the rows go in. Dropped and built again after
// them, in the same transaction, they cost a quarter less CPU, but
// SQLite sorts the keys of each in memory (the write session keeps its
// temporary storage there): 150 MiB more at a million lorries.
//
// The setting config_partial says that an apply is staging, so that a
// process that takes over after one stopped halfway puts in place what
// it staged (BeginConfigLorries does), as if its lorries had gone
// straight into the run queue.
//
// On PostgreSQL staging spares each lorry its index entries and the
// counts of lorry_buckets, which a statement trigger keeps once for each
// statement that adds lorries: added one by one, a first read of
// 100,000 lorries took 17.9 s, staged 9.1 s.

// configPartStaged is the value of the setting config_partial while an
// apply stages its lorries; "1" while it adds them one by one.
const configPartStaged = "staged"

// stagedChunk is how many staged lorries one statement puts in place.
const stagedChunk = 2000

// stagingMode is the value of config_partial for an apply begun now:
// staged if the run queue is empty.
func (tx *Tx) stagingMode(ctx context.Context) (string, error) {
	var some bool
	if err := tx.queryRow(ctx, `SELECT EXISTS (SELECT 1 FROM lorries)`).Scan(&some); err != nil {
		return "", fmt.Errorf("read lorries: %w", err)
	}
	if some {
		return "1", nil
	}
	if _, err := tx.exec(ctx, `DELETE FROM config_staged`); err != nil {
		return "", fmt.Errorf("clear staged lorries: %w", err)
	}
	return configPartStaged, nil
}

// staging says whether the apply under way stages its lorries.
func (tx *Tx) staging(ctx context.Context) (bool, error) {
	v, _, err := tx.setting(ctx, settingConfigPart)
	return v == configPartStaged, err
}

// stageConfigLorries is AddConfigLorries while staging: want, whose
// paths are recorded as seen, go into config_staged in their order. They
// count as added; one that another writer (a host's listing) put at the
// same path meanwhile is applied over it when the staged lorries are put
// in place, as AddConfigLorries would apply it, but is counted here.
func (tx *Tx) stageConfigLorries(ctx context.Context, want []NewLorry) (LorryChanges, error) {
	st, err := tx.s.stmt(ctx, `INSERT INTO config_staged
		(path, text, kind, from_path, interval, lorry_timeout, added, commit_id,
		 runtime_name, runtime_version, runtime_id, runtime_python,
		 upstream_url, max_backoff, hard_fail_after, queue, schedule, first_due)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)`)
	if err != nil {
		return LorryChanges{}, err
	}
	for _, l := range want {
		maxBackoff, hardFail := l.backoffSettings()
		if _, err := st.ExecContext(tx.stmtContext(ctx), l.Path, l.Text, l.Kind, l.FromPath, l.Interval, l.Timeout, tx.Now, l.CommitID,
			l.Runtime.Name, l.Runtime.Version, l.Runtime.ID, l.Runtime.Python,
			l.UpstreamURL, maxBackoff, hardFail, l.Queue, l.Schedule, l.FirstDue); err != nil {
			return LorryChanges{}, fmt.Errorf("stage lorry %q: %w", l.Path, err)
		}
	}
	return LorryChanges{Added: len(want)}, nil
}

// flushStaged puts the staged lorries, if any, into the run queue, and
// ends the staging: the rest of the apply goes lorry by lorry.
func (tx *Tx) flushStaged(ctx context.Context) error {
	staging, err := tx.staging(ctx)
	if err != nil || !staging {
		return err
	}
	if err := tx.applyStagedTaken(ctx); err != nil {
		return err
	}
	var n int
	if err := tx.queryRow(ctx, `SELECT COUNT(*) FROM config_staged`).Scan(&n); err != nil {
		return fmt.Errorf("count staged lorries: %w", err)
	}
	if n > 0 {
		if err := tx.insertStaged(ctx); err != nil {
			return err
		}
		if _, err := tx.exec(ctx, `DELETE FROM config_staged`); err != nil {
			return fmt.Errorf("clear staged lorries: %w", err)
		}
	}
	return tx.setSetting(ctx, settingConfigPart, "1")
}

// applyStagedTaken applies the staged lorries whose paths another writer
// has taken since as AddConfigLorries would, and unstages them.
func (tx *Tx) applyStagedTaken(ctx context.Context) error {
	rows, err := tx.query(ctx, `SELECT path, text, kind, from_path, interval, lorry_timeout, commit_id,
		runtime_name, runtime_version, runtime_id, runtime_python,
		upstream_url, max_backoff, hard_fail_after, queue, schedule, first_due
		FROM config_staged WHERE path IN (SELECT path FROM lorries) ORDER BY seq`)
	if err != nil {
		return fmt.Errorf("read staged lorries: %w", err)
	}
	var taken []NewLorry
	var paths []string
	for rows.Next() {
		var l NewLorry
		if err := rows.Scan(&l.Path, &l.Text, &l.Kind, &l.FromPath, &l.Interval, &l.Timeout, &l.CommitID,
			&l.Runtime.Name, &l.Runtime.Version, &l.Runtime.ID, &l.Runtime.Python,
			&l.UpstreamURL, &l.MaxBackoff, &l.HardFailAfter, &l.Queue, &l.Schedule, &l.FirstDue); err != nil {
			rows.Close()
			return fmt.Errorf("read staged lorries: %w", err)
		}
		taken = append(taken, l)
		paths = append(paths, l.Path)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read staged lorries: %w", err)
	}
	if len(taken) == 0 {
		return nil
	}
	list, err := json.Marshal(paths)
	if err != nil {
		return err
	}
	existing, err := tx.storedConfigLorries(ctx, string(list))
	if err != nil {
		return err
	}
	if _, err := tx.applyConfigLorries(ctx, taken, existing); err != nil {
		return err
	}
	if _, err := tx.exec(ctx, tx.q.unstageLorries, string(list)); err != nil {
		return fmt.Errorf("unstage lorries: %w", err)
	}
	return nil
}

// insertStaged puts the staged lorries at the end of the run queue, in
// their order.
func (tx *Tx) insertStaged(ctx context.Context) error {
	// The first staged lorry takes the place after the bottom, as the
	// first added one by one would.
	var bottom int64
	if err := tx.queryRow(ctx, `SELECT COALESCE((SELECT MAX(queue_pos) FROM lorries), -1)
		- (SELECT MIN(seq) FROM config_staged) + 1`).Scan(&bottom); err != nil {
		return fmt.Errorf("read queue: %w", err)
	}
	// A scheduled lorry is first due at its first event, its stateful
	// cron started when it was staged, as the schedule of a lorry added
	// one by one is (configStmts' setSchedule). One statement for all of
	// them held memory in proportion (40 MiB for 100,000 lorries), so
	// it is a statement for each stagedChunk.
	var first, last int64
	if err := tx.queryRow(ctx, `SELECT MIN(seq), MAX(seq) FROM config_staged`).Scan(&first, &last); err != nil {
		return fmt.Errorf("read staged lorries: %w", err)
	}
	for from := first - 1; from < last; from += stagedChunk {
		if _, err := tx.exec(ctx, `INSERT INTO lorries
		(path, text, kind, generated, from_host, from_path, interval, lorry_timeout, queue_pos, running_job, next_due,
		 commit_id, runtime_name, runtime_version, runtime_id, runtime_python,
		 upstream_url, max_backoff, hard_fail_after, queue,
		 schedule, cron_wall, cron_handled, cron_next)
		SELECT s.path, s.text, s.kind, 0, '', s.from_path, s.interval, s.lorry_timeout, $1 + s.seq,
		 (SELECT id FROM jobs WHERE jobs.path = s.path AND status IN ('claimed', 'running')),
		 CASE WHEN s.schedule = '' THEN s.added ELSE s.first_due END,
		 s.commit_id, s.runtime_name, s.runtime_version, s.runtime_id, s.runtime_python,
		 s.upstream_url, s.max_backoff, s.hard_fail_after, CASE WHEN s.queue = '' THEN $2 ELSE s.queue END,
		 s.schedule, CASE WHEN s.schedule = '' THEN 0 ELSE s.added END,
		 CASE WHEN s.schedule = '' THEN 0 ELSE s.added - 1 END,
		 CASE WHEN s.schedule = '' THEN 0 ELSE s.first_due END
		FROM config_staged AS s WHERE s.seq > $3 AND s.seq <= $4 ORDER BY s.seq`,
			bottom, DefaultQueue, from, from+stagedChunk); err != nil {
			return fmt.Errorf("add the staged lorries: %w", err)
		}
		// Their pages are free for the next chunk's, so the file grows
		// by the lorries, not by the lorries and their staging.
		if _, err := tx.exec(ctx, `DELETE FROM config_staged WHERE seq > $1 AND seq <= $2`, from, from+stagedChunk); err != nil {
			return fmt.Errorf("clear staged lorries: %w", err)
		}
	}
	return nil
}
