package statedb

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// NewLorry is a lorry as the configuration, or an upstream host's
// listing, describes it.
type NewLorry struct {
	Path          string
	Text          string
	Kind          string
	FromPath      string
	Interval      int64
	Timeout       int64
	Description   string
	DefaultBranch string
	CommitID      string  // for a scraper: the CONFGIT commit it was read from
	Runtime       Runtime // for a scraper: its runtime at CommitID
	// Schedule, if not "", replaces Interval, and FirstDue is its first
	// event at or after now: when a new entry, or one whose schedule
	// changed, is first due.
	Schedule string
	FirstDue int64
	// UpstreamURL is a git lorry's upstream URL, normalised as push hooks
	// are matched; "" for other kinds.
	UpstreamURL string
	// MaxBackoff (seconds) and HardFailAfter are the section's
	// max-backoff and hard-fail-after; 0 means the defaults.
	MaxBackoff    int64
	HardFailAfter int64
	// Queue, if not "", is the queue the configuration puts the lorry
	// in; "" leaves it where it is.
	Queue string
}

// backoffSettings are l's max-backoff and hard-fail-after, with the
// defaults for those not given.
func (l NewLorry) backoffSettings() (maxBackoff, hardFailAfter int64) {
	maxBackoff, hardFailAfter = l.MaxBackoff, l.HardFailAfter
	if maxBackoff <= 0 {
		maxBackoff = DefaultMaxBackoff
	}
	if hardFailAfter <= 0 {
		hardFailAfter = DefaultHardFailAfter
	}
	return maxBackoff, hardFailAfter
}

// LorryChanges counts what applying a configuration did to the run queue.
type LorryChanges struct {
	Added     int `json:"added"`
	Changed   int `json:"changed"`
	Removed   int `json:"removed"`
	Unchanged int `json:"unchanged"`
}

// Kept names configuration lorries that are not in the new configuration
// only because their definitions are broken; they stay as they were.
type Kept struct {
	FromPaths []string // lorries whose from_path (the .lorry file) is one of these
	Paths     []string // lorries at these paths
}

// SetConfigLorries makes the lorries that came from the configuration
// exactly want, in one transaction: new ones are added at the end of the
// queue, vanished ones removed unless kept, changed ones updated in place
// (keeping their place and history). It is BeginConfigLorries,
// AddConfigLorries, KeepConfigLorries and RemoveUnseenLorries in one; a
// configuration too large to hold at once is applied with those, in
// batches.
func (tx *Tx) SetConfigLorries(ctx context.Context, want []NewLorry, kept Kept) (LorryChanges, error) {
	if err := tx.BeginConfigLorries(ctx); err != nil {
		return LorryChanges{}, err
	}
	ch, err := tx.AddConfigLorries(ctx, want)
	if err != nil {
		return ch, err
	}
	if err := tx.KeepConfigLorries(ctx, kept); err != nil {
		return ch, err
	}
	for after := ""; ; {
		n, last, err := tx.RemoveUnseenLorries(ctx, after, removeBatch)
		if err != nil {
			return ch, err
		}
		ch.Removed += n
		if last == "" {
			break
		}
		after = last
	}
	return ch, tx.EndConfigLorries(ctx)
}

// removeBatch is how many lorries SetConfigLorries looks at for removal
// at a time.
const removeBatch = 1000

// A configuration is applied in steps, each in a transaction of its own
// if it is large, so that neither the WEBAPP nor SQLite holds all of it
// at once: BeginConfigLorries, then AddConfigLorries for every batch of
// its lorries, KeepConfigLorries, RemoveUnseenLorries until it says it is
// done, and EndConfigLorries. The paths added in the meantime are kept in
// config_seen (on SQLite a temporary table of the write session, on
// PostgreSQL a table of the database), so only one configuration may be
// applied at a time. Nothing is removed before every lorry of the
// configuration is in place: a reader in the meantime sees each lorry
// either as it was or as the configuration has it, and sees every lorry
// that either defines.

// BeginConfigLorries starts applying a configuration's lorries. Until
// CompleteConfigLorries, ConfigPartial says so, to every process.
func (tx *Tx) BeginConfigLorries(ctx context.Context) error {
	// What an apply left staged when it stopped is put in place first,
	// as if its lorries had gone straight into the run queue.
	if err := tx.flushStaged(ctx); err != nil {
		return fmt.Errorf("start applying the configuration: %w", err)
	}
	part, err := tx.stagingMode(ctx)
	if err != nil {
		return fmt.Errorf("start applying the configuration: %w", err)
	}
	if err := tx.setSetting(ctx, settingConfigPart, part); err != nil {
		return fmt.Errorf("start applying the configuration: %w", err)
	}
	if err := tx.drv.makeConfigSeen(ctx, tx); err != nil {
		return fmt.Errorf("start applying the configuration: %w", err)
	}
	if _, err := tx.exec(ctx, `DELETE FROM config_seen`); err != nil {
		return fmt.Errorf("start applying the configuration: %w", err)
	}
	return nil
}

// CompleteConfigLorries records that the configuration begun with
// BeginConfigLorries is applied whole: its last RemoveUnseenLorries is
// done.
func (tx *Tx) CompleteConfigLorries(ctx context.Context) error {
	if err := tx.flushStaged(ctx); err != nil {
		return fmt.Errorf("complete applying the configuration: %w", err)
	}
	if err := tx.deleteSetting(ctx, settingConfigPart); err != nil {
		return fmt.Errorf("complete applying the configuration: %w", err)
	}
	return nil
}

// ConfigPartial says that a configuration was begun (BeginConfigLorries)
// and not applied whole since (CompleteConfigLorries), by any process: the
// lorries may be part one commit's and part another's.
func (tx *Tx) ConfigPartial(ctx context.Context) (bool, error) {
	_, ok, err := tx.setting(ctx, settingConfigPart)
	return ok, err
}

// EndConfigLorries forgets the paths that the configuration applied
// since BeginConfigLorries defines.
func (tx *Tx) EndConfigLorries(ctx context.Context) error {
	if err := tx.flushStaged(ctx); err != nil {
		return fmt.Errorf("end applying the configuration: %w", err)
	}
	if _, err := tx.exec(ctx, `DELETE FROM config_seen`); err != nil {
		return fmt.Errorf("end applying the configuration: %w", err)
	}
	return nil
}

// AddConfigLorries applies a batch of the configuration's lorries: new
// ones are added at the end of the queue, in the order of want; changed
// ones updated in place (keeping their place and history). A scraper
// whose spec and runtime are the same at a new commit is unchanged, but
// records the new commit, whose files its next job gets. Lorries
// generated from upstream hosts are not touched, unless the
// configuration names the same path, which then takes it over. A path
// given twice since BeginConfigLorries is ErrInvalid. On SQLite, the
// lorries of a configuration begun on an empty run queue are staged, and
// reach it all at once at the next step (configstaged.go).
func (tx *Tx) AddConfigLorries(ctx context.Context, want []NewLorry) (LorryChanges, error) {
	list, err := tx.seeConfigLorries(ctx, want)
	if err != nil {
		return LorryChanges{}, err
	}
	staging, err := tx.staging(ctx)
	if err != nil {
		return LorryChanges{}, err
	}
	if staging {
		return tx.stageConfigLorries(ctx, want)
	}
	existing, err := tx.storedConfigLorries(ctx, list)
	if err != nil {
		return LorryChanges{}, err
	}
	return tx.applyConfigLorries(ctx, want, existing)
}

// applyConfigLorries is AddConfigLorries once the paths of want are
// recorded as seen: existing are the stored lorries at those paths.
func (tx *Tx) applyConfigLorries(ctx context.Context, want []NewLorry, existing map[string]configHave) (LorryChanges, error) {
	var ch LorryChanges
	var bottom int64
	if err := tx.queryRow(ctx, `SELECT COALESCE(MAX(queue_pos), -1) FROM lorries`).Scan(&bottom); err != nil {
		return ch, fmt.Errorf("read queue: %w", err)
	}
	st, err := tx.configStmts(ctx)
	if err != nil {
		return ch, err
	}
	for _, l := range want {
		h, ok := existing[l.Path]
		maxBackoff, hardFail := l.backoffSettings()
		switch {
		case !ok:
			bottom++
			queue := cmp.Or(l.Queue, DefaultQueue)
			if _, err := st.insert.ExecContext(ctx, l.Path, l.Text, l.Kind, l.FromPath, l.Interval, l.Timeout, bottom, l.Path,
				tx.Now, l.CommitID, l.Runtime.Name, l.Runtime.Version, l.Runtime.ID, l.Runtime.Python,
				l.UpstreamURL, maxBackoff, hardFail, queue); err != nil {
				return ch, fmt.Errorf("add lorry %q: %w", l.Path, err)
			}
			if l.Schedule != "" {
				if _, err := st.setSchedule.ExecContext(ctx, l.Schedule, l.FirstDue, tx.Now, l.Path); err != nil {
					return ch, fmt.Errorf("schedule lorry %q: %w", l.Path, err)
				}
			}
			ch.Added++
		case h.generated || h.text != l.Text || h.kind != l.Kind || h.fromPath != l.FromPath ||
			h.interval != l.Interval || h.timeout != l.Timeout || h.runtime != l.Runtime || h.schedule != l.Schedule:
			if _, err := st.update.ExecContext(ctx, l.Text, l.Kind, l.FromPath, l.Interval, l.Timeout, l.Interval,
				l.CommitID, l.Runtime.Name, l.Runtime.Version, l.Runtime.ID, l.Runtime.Python, l.Path); err != nil {
				return ch, fmt.Errorf("update lorry %q: %w", l.Path, err)
			}
			if l.Schedule != "" || h.schedule != "" {
				if _, err := st.setSchedule.ExecContext(ctx, l.Schedule, l.FirstDue, tx.Now, l.Path); err != nil {
					return ch, fmt.Errorf("schedule lorry %q: %w", l.Path, err)
				}
			}
			ch.Changed++
		case h.commit != l.CommitID:
			if _, err := st.recommit.ExecContext(ctx, l.CommitID, l.Path); err != nil {
				return ch, fmt.Errorf("update lorry %q: %w", l.Path, err)
			}
			ch.Unchanged++
		default:
			ch.Unchanged++
		}
		if !ok {
			continue
		}
		// Kept apart from the changes above: a database made before
		// upstream URLs were stored learns them at the next read, without
		// any lorry counting as changed.
		if h.upstreamURL != l.UpstreamURL {
			if _, err := st.setUpstream.ExecContext(ctx, l.UpstreamURL, l.Path); err != nil {
				return ch, fmt.Errorf("update lorry %q: %w", l.Path, err)
			}
		}
		// The backoff settings alone are no change of spec: they apply
		// from the lorry's next failure.
		if h.maxBackoff != maxBackoff || h.hardFail != hardFail {
			if _, err := st.setBackoff.ExecContext(ctx, maxBackoff, hardFail, l.Path); err != nil {
				return ch, fmt.Errorf("update lorry %q: %w", l.Path, err)
			}
		}
		// Nor is the queue.
		if l.Queue != "" && h.queue != l.Queue {
			if _, err := st.setQueue.ExecContext(ctx, l.Queue, l.Path); err != nil {
				return ch, fmt.Errorf("put lorry %q in queue %q: %w", l.Path, l.Queue, err)
			}
		}
	}
	return ch, nil
}

// configHave is what AddConfigLorries compares of a stored lorry.
type configHave struct {
	text, kind, fromPath string
	interval, timeout    int64
	generated            bool
	commit               string
	runtime              Runtime
	schedule             string
	upstreamURL          string
	maxBackoff, hardFail int64
	queue                string
}

// seeConfigLorries records the paths of want as seen since
// BeginConfigLorries, and returns them as a JSON list. A path seen
// before, or twice in want, is ErrInvalid.
func (tx *Tx) seeConfigLorries(ctx context.Context, want []NewLorry) (string, error) {
	paths := make([]string, len(want))
	given := make(map[string]bool, len(want))
	for i, l := range want {
		if given[l.Path] {
			return "", fmt.Errorf("lorry %q given twice: %w", l.Path, ErrInvalid)
		}
		given[l.Path] = true
		paths[i] = l.Path
	}
	list, err := json.Marshal(paths)
	if err != nil {
		return "", err
	}
	// One statement each for the whole batch: a statement for each lorry
	// cost more than the rest of the apply.
	var twice string
	err = tx.queryRow(ctx, tx.q.seenTwice,
		string(list)).Scan(&twice)
	if err == nil {
		return "", fmt.Errorf("lorry %q given twice: %w", twice, ErrInvalid)
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("read lorries: %w", err)
	}
	if _, err := tx.exec(ctx, tx.q.seeConfigLorries, string(list)); err != nil {
		return "", fmt.Errorf("read lorries: %w", err)
	}
	return string(list), nil
}

// storedConfigLorries returns the stored lorries at the paths of list, a
// JSON list.
func (tx *Tx) storedConfigLorries(ctx context.Context, list string) (map[string]configHave, error) {
	rows, err := tx.query(ctx, tx.q.storedConfigLorries, list)
	if err != nil {
		return nil, fmt.Errorf("read lorries: %w", err)
	}
	defer rows.Close()
	out := map[string]configHave{}
	for rows.Next() {
		var p string
		var h configHave
		if err := rows.Scan(&p, &h.text, &h.kind, &h.fromPath, &h.interval, &h.timeout, &h.generated,
			&h.commit, &h.runtime.Name, &h.runtime.Version, &h.runtime.ID, &h.runtime.Python, &h.schedule,
			&h.upstreamURL, &h.maxBackoff, &h.hardFail, &h.queue); err != nil {
			return nil, fmt.Errorf("read lorries: %w", err)
		}
		out[p] = h
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read lorries: %w", err)
	}
	return out, nil
}

// KeepConfigLorries keeps the configuration lorries that kept names
// (those of broken definitions) from RemoveUnseenLorries, as if the
// configuration applied since BeginConfigLorries defined them.
func (tx *Tx) KeepConfigLorries(ctx context.Context, kept Kept) error {
	if err := tx.flushStaged(ctx); err != nil {
		return err
	}
	for _, p := range kept.Paths {
		if _, err := tx.exec(ctx, `INSERT INTO config_seen (path) VALUES ($1) ON CONFLICT DO NOTHING`, p); err != nil {
			return fmt.Errorf("keep lorry %q: %w", p, err)
		}
	}
	for _, f := range kept.FromPaths {
		if _, err := tx.exec(ctx, `INSERT INTO config_seen (path)
			SELECT path FROM lorries WHERE from_path = $1 AND generated = 0 ON CONFLICT DO NOTHING`, f); err != nil {
			return fmt.Errorf("keep the lorries of %q: %w", f, err)
		}
	}
	return nil
}

// RemoveUnseenLorries removes the configuration lorries that the
// configuration applied since BeginConfigLorries does not define, nor
// keeps: of those whose paths come after after, the first limit, in path
// order. It returns how many it removed, and the path to give as after
// next time, "" when none is left. A running job of a removed lorry is
// left to finish; it just has no lorry to report to. Lorries generated
// from upstream hosts are not touched.
//
// The paths seen are asked for with NOT EXISTS, not NOT IN: PostgreSQL
// answers NOT IN with a hash of the paths seen only while they fit in
// its work_mem, and otherwise looks each lorry up in a list of them, a
// million times a million at a million lorries.
func (tx *Tx) RemoveUnseenLorries(ctx context.Context, after string, limit int) (int, string, error) {
	if err := tx.flushStaged(ctx); err != nil {
		return 0, "", err
	}
	rows, err := tx.query(ctx, removedLorriesQuery, after, limit)
	if err != nil {
		return 0, "", fmt.Errorf("find removed lorries: %w", err)
	}
	var paths []string
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			rows.Close()
			return 0, "", fmt.Errorf("find removed lorries: %w", err)
		}
		paths = append(paths, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, "", fmt.Errorf("find removed lorries: %w", err)
	}
	for _, p := range paths {
		if _, err := tx.exec(ctx, `DELETE FROM lorries WHERE path = $1`, p); err != nil {
			return 0, "", fmt.Errorf("remove lorry %q: %w", p, err)
		}
	}
	if len(paths) < limit {
		return len(paths), "", nil
	}
	return len(paths), paths[len(paths)-1], nil
}

// removedLorriesQuery finds the configuration lorries after ?1 that the
// configuration applied does not define, ?2 at most, in path order.
const removedLorriesQuery = `SELECT path FROM lorries
	WHERE path > $1 AND generated = 0
		AND NOT EXISTS (SELECT 1 FROM config_seen AS s WHERE s.path = lorries.path)
	ORDER BY path LIMIT $2`

// configStmts are the statements AddConfigLorries runs for each lorry.
type configStmts struct {
	insert, setSchedule, update, recommit, setUpstream, setBackoff, setQueue *stmt
}

func (tx *Tx) configStmts(ctx context.Context) (configStmts, error) {
	var st configStmts
	var err error
	if st.insert, err = tx.s.stmt(ctx, `INSERT INTO lorries
		(path, text, kind, generated, from_host, from_path, interval, lorry_timeout, queue_pos, running_job, next_due,
		 commit_id, runtime_name, runtime_version, runtime_id, runtime_python,
		 upstream_url, max_backoff, hard_fail_after, queue)
		VALUES ($1, $2, $3, 0, '', $4, $5, $6, $7, (SELECT id FROM jobs WHERE path = $8 AND status IN ('claimed', 'running')), $9,
		 $10, $11, $12, $13, $14, $15, $16, $17, $18)`); err != nil {
		return st, err
	}
	// A schedule, new or changed, starts its stateful cron now: its
	// events up to now are dealt with (none fires), and the first due is
	// its first event at or after now.
	if st.setSchedule, err = tx.s.stmt(ctx, tx.q.setSchedule); err != nil {
		return st, err
	}
	// A changed spec ends a failure streak: whatever failed may be
	// fixed, so the lorry runs at its interval again (see resetStreak).
	if st.update, err = tx.s.stmt(ctx, tx.q.updateConfigLorry); err != nil {
		return st, err
	}
	if st.recommit, err = tx.s.stmt(ctx, `UPDATE lorries SET commit_id = $1 WHERE path = $2`); err != nil {
		return st, err
	}
	if st.setUpstream, err = tx.s.stmt(ctx, `UPDATE lorries SET upstream_url = $1 WHERE path = $2`); err != nil {
		return st, err
	}
	if st.setBackoff, err = tx.s.stmt(ctx, `UPDATE lorries SET max_backoff = $1, hard_fail_after = $2 WHERE path = $3`); err != nil {
		return st, err
	}
	if st.setQueue, err = tx.s.stmt(ctx, `UPDATE lorries SET queue = $1 WHERE path = $2`); err != nil {
		return st, err
	}
	return st, nil
}

// The parts of the statements of a configuration's lorries
// (dialectSQL's storedConfigLorries, setSchedule and updateConfigLorry)
// that both dialects share. A schedule, new or changed, starts its
// stateful cron now: its events up to now are dealt with (none fires),
// and the first due is its first event at or after now. A changed spec
// ends a failure streak: whatever failed may be fixed, so the lorry runs
// at its interval again (see resetStreak).
const (
	storedConfigColumns = `SELECT path, text, kind, from_path, interval, lorry_timeout, generated, commit_id,
		runtime_name, runtime_version, runtime_id, runtime_python, schedule, upstream_url,
		max_backoff, hard_fail_after, queue`
	setScheduleRest = `
			WHEN schedule = $1 THEN next_due ELSE $2 END,
		cron_wall = CASE WHEN $1 = '' THEN 0 WHEN schedule = $1 THEN cron_wall ELSE $3 END,
		cron_mono = CASE WHEN $1 != '' AND schedule = $1 THEN cron_mono ELSE 0 END,
		cron_boot = CASE WHEN $1 != '' AND schedule = $1 THEN cron_boot ELSE '' END,
		cron_handled = CASE WHEN $1 = '' THEN 0 WHEN schedule = $1 THEN cron_handled ELSE $3 - 1 END,
		cron_next = CASE WHEN $1 = '' THEN 0 WHEN schedule = $1 THEN cron_next ELSE $2 END,
		schedule = $1
		WHERE path = $4`
	updateConfigLorryHead = `UPDATE lorries SET text = $1, kind = $2, generated = 0,
		from_host = '', from_path = $3, interval = $4, lorry_timeout = $5, description = '', default_branch = '',
		upstream_head = '',
		`
	updateConfigLorryRest = `
		` + resetStreak + `,
		commit_id = $7, runtime_name = $8, runtime_version = $9, runtime_id = $10, runtime_python = $11
		WHERE path = $12`
)
