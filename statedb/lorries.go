package statedb

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Lorry is one entry of the run queue.
type Lorry struct {
	Path         string
	Text         string
	Kind         string
	Generated    bool
	FromHost     string
	FromPath     string
	Interval     int64 // seconds
	Timeout      int64 // seconds
	QueuePos     int64
	RunningJob   *int64
	LastRun      *int64
	NextDue      int64
	LastRunExit  *int64
	LastRunError string
	DiskUsage    *int64
	// Description and DefaultBranch come from the upstream host, for the
	// downstream repository; empty when unknown.
	Description   string
	DefaultBranch string
	// CommitID is the CONFGIT commit a scraper was read from, and Runtime
	// its runtime there; both empty for a lorry.
	CommitID string
	Runtime  Runtime
	// UpstreamHead is the branch that the upstream's HEAD named, as the
	// last successful job that knew it reported; empty when unknown.
	UpstreamHead string
	// Queue is the queue the entry is handed out from.
	Queue string
	// Schedule is the lorry's schedule (a cron item's JSON), which
	// replaces Interval; "" for none.
	Schedule string
	// MaxBackoff (seconds) and HardFailAfter are the lorry's section's
	// max-backoff and hard-fail-after.
	MaxBackoff    int64
	HardFailAfter int64
	// ConsecutiveFailures counts the failed runs since the last success
	// (or Retry now, or change of spec), State is what they led to, one
	// of the State constants, and BackoffUntil is when the backoff lets
	// the lorry run again (0 for none).
	ConsecutiveFailures int64
	State               string
	BackoffUntil        int64
	// LastSuccess is when the last successful run started; nil if none
	// has been seen.
	LastSuccess *int64
	// LastErrorClass is the error class of the last failed run, "" when
	// the last run did not fail or its class is unknown.
	LastErrorClass string
}

// Runtime is the runtime a scraper runs in, as a commit of CONFGIT
// defines it.
type Runtime struct {
	Name    string
	Version string
	ID      string // git tree id of the runtime directory
	Python  string
}

const lorryColumns = `path, text, kind, generated, from_host, from_path, interval,
	lorry_timeout, queue_pos, running_job, last_run, next_due, last_run_exit,
	last_run_error, disk_usage, description, default_branch,
	commit_id, runtime_name, runtime_version, runtime_id, runtime_python, upstream_head, queue, schedule,
	max_backoff, hard_fail_after, consecutive_failures, state, backoff_until, last_success, last_error_class`

type scanner interface{ Scan(...any) error }

func scanLorry(row scanner) (Lorry, error) {
	var l Lorry
	var running, lastRun, exit, du, success sql.NullInt64
	err := row.Scan(&l.Path, &l.Text, &l.Kind, &l.Generated, &l.FromHost, &l.FromPath,
		&l.Interval, &l.Timeout, &l.QueuePos, &running, &lastRun, &l.NextDue, &exit,
		&l.LastRunError, &du, &l.Description, &l.DefaultBranch,
		&l.CommitID, &l.Runtime.Name, &l.Runtime.Version, &l.Runtime.ID, &l.Runtime.Python, &l.UpstreamHead, &l.Queue, &l.Schedule,
		&l.MaxBackoff, &l.HardFailAfter, &l.ConsecutiveFailures, &l.State, &l.BackoffUntil, &success, &l.LastErrorClass)
	l.RunningJob, l.LastRun, l.LastRunExit, l.DiskUsage = nullInt(running), nullInt(lastRun), nullInt(exit), nullInt(du)
	l.LastSuccess = nullInt(success)
	return l, err
}

// Lorry returns the run-queue entry at path.
func (tx *Tx) Lorry(ctx context.Context, path string) (Lorry, error) {
	l, err := scanLorry(tx.queryRow(ctx, `SELECT `+lorryColumns+` FROM lorries WHERE path = ?`, path))
	if errors.Is(err, sql.ErrNoRows) {
		return l, fmt.Errorf("no lorry %q: %w", path, ErrNotFound)
	}
	if err != nil {
		return l, fmt.Errorf("read lorry %q: %w", path, err)
	}
	return l, nil
}

// Lorries returns the whole run queue in queue order.
func (tx *Tx) Lorries(ctx context.Context) ([]Lorry, error) {
	var out []Lorry
	err := tx.EachLorry(ctx, func(l Lorry) error {
		out = append(out, l)
		return nil
	})
	return out, err
}

// EachLorry calls fn on every lorry in queue order, without holding the
// whole queue in memory; an error from fn stops the walk and is returned.
func (tx *Tx) EachLorry(ctx context.Context, fn func(Lorry) error) error {
	rows, err := tx.query(ctx, `SELECT `+lorryColumns+` FROM lorries ORDER BY queue_pos`)
	if err != nil {
		return fmt.Errorf("list lorries: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		l, err := scanLorry(rows)
		if err != nil {
			return fmt.Errorf("list lorries: %w", err)
		}
		if err := fn(l); err != nil {
			return err
		}
	}
	return rows.Err()
}

// QueuePaths returns the paths of the run queue in queue order.
func (tx *Tx) QueuePaths(ctx context.Context) ([]string, error) {
	rows, err := tx.query(ctx, `SELECT path FROM lorries ORDER BY queue_pos`)
	if err != nil {
		return nil, fmt.Errorf("list queue: %w", err)
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			return nil, fmt.Errorf("list queue: %w", err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// LorryCounts summarises the run queue at time now.
type LorryCounts struct {
	Total   int64 `json:"total"`
	Due     int64 `json:"due"`
	Failing int64 `json:"failing"`
	Running int64 `json:"running"`
}

// CountLorries counts the run queue's lorries: all of them, those due now,
// those whose last run failed and those running.
func (tx *Tx) CountLorries(ctx context.Context) (LorryCounts, error) {
	var c LorryCounts
	err := tx.queryRow(ctx, `SELECT COUNT(*),
			COALESCE(SUM(running_job IS NULL AND next_due <= ?), 0),
			COALESCE(SUM(last_run_exit IS NOT NULL AND last_run_exit != 0 OR last_run_error != ''), 0),
			COALESCE(SUM(running_job IS NOT NULL), 0)
		FROM lorries`, tx.Now).Scan(&c.Total, &c.Due, &c.Failing, &c.Running)
	if err != nil {
		return c, fmt.Errorf("count lorries: %w", err)
	}
	return c, nil
}

// MoveToTop puts the lorry at path first in the queue.
func (tx *Tx) MoveToTop(ctx context.Context, path string) error {
	return tx.moveLorry(ctx, path, `SELECT COALESCE(MIN(queue_pos), 1) - 1 FROM lorries`)
}

// MoveToBottom puts the lorry at path last in the queue.
func (tx *Tx) MoveToBottom(ctx context.Context, path string) error {
	return tx.moveLorry(ctx, path, `SELECT COALESCE(MAX(queue_pos), -1) + 1 FROM lorries`)
}

func (tx *Tx) moveLorry(ctx context.Context, path, posQuery string) error {
	var pos int64
	if err := tx.queryRow(ctx, posQuery).Scan(&pos); err != nil {
		return fmt.Errorf("move lorry %q: %w", path, err)
	}
	res, err := tx.exec(ctx, `UPDATE lorries SET queue_pos = ? WHERE path = ?`, pos, path)
	if err != nil {
		return fmt.Errorf("move lorry %q: %w", path, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("no lorry %q: %w", path, ErrNotFound)
	}
	return nil
}

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
// done, and EndConfigLorries. The write session remembers the paths added
// in the meantime, in a temporary table, so only one configuration may be
// applied at a time. Nothing is removed before every lorry of the
// configuration is in place: a reader in the meantime sees each lorry
// either as it was or as the configuration has it, and sees every lorry
// that either defines.

// BeginConfigLorries starts applying a configuration's lorries.
func (tx *Tx) BeginConfigLorries(ctx context.Context) error {
	if _, err := tx.exec(ctx, `CREATE TEMP TABLE IF NOT EXISTS config_seen (path TEXT PRIMARY KEY) WITHOUT ROWID`); err != nil {
		return fmt.Errorf("start applying the configuration: %w", err)
	}
	if _, err := tx.exec(ctx, `DELETE FROM temp.config_seen`); err != nil {
		return fmt.Errorf("start applying the configuration: %w", err)
	}
	return nil
}

// EndConfigLorries forgets the paths that the configuration applied
// since BeginConfigLorries defines.
func (tx *Tx) EndConfigLorries(ctx context.Context) error {
	if _, err := tx.exec(ctx, `DELETE FROM temp.config_seen`); err != nil {
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
// given twice since BeginConfigLorries is ErrInvalid.
func (tx *Tx) AddConfigLorries(ctx context.Context, want []NewLorry) (LorryChanges, error) {
	var ch LorryChanges
	existing, err := tx.configLorries(ctx, want)
	if err != nil {
		return ch, err
	}
	var bottom int64
	if err := tx.queryRow(ctx, `SELECT COALESCE(MAX(queue_pos), -1) FROM lorries`).Scan(&bottom); err != nil {
		return ch, fmt.Errorf("read queue: %w", err)
	}
	insert, err := tx.s.stmt(ctx, `INSERT INTO lorries
		(path, text, kind, generated, from_host, from_path, interval, lorry_timeout, queue_pos, running_job, next_due,
		 commit_id, runtime_name, runtime_version, runtime_id, runtime_python,
		 upstream_url, max_backoff, hard_fail_after, queue)
		VALUES (?, ?, ?, 0, '', ?, ?, ?, ?, (SELECT id FROM jobs WHERE path = ? AND status IN ('claimed', 'running')), ?,
		 ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return ch, err
	}
	// A schedule, new or changed, starts its stateful cron now: its
	// events up to now are dealt with (none fires), and the first due is
	// its first event at or after now.
	setSchedule, err := tx.s.stmt(ctx, `UPDATE lorries SET
		next_due = CASE WHEN ?1 = '' THEN (CASE WHEN last_run IS NULL THEN MIN(next_due, ?3) ELSE last_run + interval END)
			WHEN schedule = ?1 THEN next_due ELSE ?2 END,
		cron_wall = CASE WHEN ?1 = '' THEN 0 WHEN schedule = ?1 THEN cron_wall ELSE ?3 END,
		cron_mono = CASE WHEN ?1 != '' AND schedule = ?1 THEN cron_mono ELSE 0 END,
		cron_boot = CASE WHEN ?1 != '' AND schedule = ?1 THEN cron_boot ELSE '' END,
		cron_handled = CASE WHEN ?1 = '' THEN 0 WHEN schedule = ?1 THEN cron_handled ELSE ?3 - 1 END,
		cron_next = CASE WHEN ?1 = '' THEN 0 WHEN schedule = ?1 THEN cron_next ELSE ?2 END,
		schedule = ?1
		WHERE path = ?4`)
	if err != nil {
		return ch, err
	}
	// A changed spec ends a failure streak: whatever failed may be
	// fixed, so the lorry runs at its interval again (see resetStreak).
	update, err := tx.s.stmt(ctx, `UPDATE lorries SET text = ?, kind = ?, generated = 0,
		from_host = '', from_path = ?, interval = ?, lorry_timeout = ?, description = '', default_branch = '',
		upstream_head = '',
		next_due = CASE WHEN schedule != '' THEN MIN(next_due, cron_next) WHEN last_run IS NULL THEN next_due ELSE last_run + ? END,
		`+resetStreak+`,
		commit_id = ?, runtime_name = ?, runtime_version = ?, runtime_id = ?, runtime_python = ?
		WHERE path = ?`)
	if err != nil {
		return ch, err
	}
	recommit, err := tx.s.stmt(ctx, `UPDATE lorries SET commit_id = ? WHERE path = ?`)
	if err != nil {
		return ch, err
	}
	setUpstream, err := tx.s.stmt(ctx, `UPDATE lorries SET upstream_url = ? WHERE path = ?`)
	if err != nil {
		return ch, err
	}
	setBackoff, err := tx.s.stmt(ctx, `UPDATE lorries SET max_backoff = ?, hard_fail_after = ? WHERE path = ?`)
	if err != nil {
		return ch, err
	}
	setQueue, err := tx.s.stmt(ctx, `UPDATE lorries SET queue = ? WHERE path = ?`)
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
			if _, err := insert.ExecContext(ctx, l.Path, l.Text, l.Kind, l.FromPath, l.Interval, l.Timeout, bottom, l.Path,
				tx.Now, l.CommitID, l.Runtime.Name, l.Runtime.Version, l.Runtime.ID, l.Runtime.Python,
				l.UpstreamURL, maxBackoff, hardFail, queue); err != nil {
				return ch, fmt.Errorf("add lorry %q: %w", l.Path, err)
			}
			if l.Schedule != "" {
				if _, err := setSchedule.ExecContext(ctx, l.Schedule, l.FirstDue, tx.Now, l.Path); err != nil {
					return ch, fmt.Errorf("schedule lorry %q: %w", l.Path, err)
				}
			}
			ch.Added++
		case h.generated || h.text != l.Text || h.kind != l.Kind || h.fromPath != l.FromPath ||
			h.interval != l.Interval || h.timeout != l.Timeout || h.runtime != l.Runtime || h.schedule != l.Schedule:
			if _, err := update.ExecContext(ctx, l.Text, l.Kind, l.FromPath, l.Interval, l.Timeout, l.Interval,
				l.CommitID, l.Runtime.Name, l.Runtime.Version, l.Runtime.ID, l.Runtime.Python, l.Path); err != nil {
				return ch, fmt.Errorf("update lorry %q: %w", l.Path, err)
			}
			if l.Schedule != "" || h.schedule != "" {
				if _, err := setSchedule.ExecContext(ctx, l.Schedule, l.FirstDue, tx.Now, l.Path); err != nil {
					return ch, fmt.Errorf("schedule lorry %q: %w", l.Path, err)
				}
			}
			ch.Changed++
		case h.commit != l.CommitID:
			if _, err := recommit.ExecContext(ctx, l.CommitID, l.Path); err != nil {
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
			if _, err := setUpstream.ExecContext(ctx, l.UpstreamURL, l.Path); err != nil {
				return ch, fmt.Errorf("update lorry %q: %w", l.Path, err)
			}
		}
		// The backoff settings alone are no change of spec: they apply
		// from the lorry's next failure.
		if h.maxBackoff != maxBackoff || h.hardFail != hardFail {
			if _, err := setBackoff.ExecContext(ctx, maxBackoff, hardFail, l.Path); err != nil {
				return ch, fmt.Errorf("update lorry %q: %w", l.Path, err)
			}
		}
		// Nor is the queue.
		if l.Queue != "" && h.queue != l.Queue {
			if _, err := setQueue.ExecContext(ctx, l.Queue, l.Path); err != nil {
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

// configLorries records the paths of want as seen since
// BeginConfigLorries, and returns the stored lorries at those paths. A
// path seen before, or twice in want, is ErrInvalid.
func (tx *Tx) configLorries(ctx context.Context, want []NewLorry) (map[string]configHave, error) {
	paths := make([]string, len(want))
	given := make(map[string]bool, len(want))
	for i, l := range want {
		if given[l.Path] {
			return nil, fmt.Errorf("lorry %q given twice: %w", l.Path, ErrInvalid)
		}
		given[l.Path] = true
		paths[i] = l.Path
	}
	list, err := json.Marshal(paths)
	if err != nil {
		return nil, err
	}
	// One statement each for the whole batch: a statement for each lorry
	// cost more than the rest of the apply.
	var twice string
	err = tx.queryRow(ctx, `SELECT value FROM json_each(?) WHERE value IN (SELECT path FROM temp.config_seen) LIMIT 1`,
		string(list)).Scan(&twice)
	if err == nil {
		return nil, fmt.Errorf("lorry %q given twice: %w", twice, ErrInvalid)
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("read lorries: %w", err)
	}
	if _, err := tx.exec(ctx, `INSERT INTO temp.config_seen (path) SELECT value FROM json_each(?)`, string(list)); err != nil {
		return nil, fmt.Errorf("read lorries: %w", err)
	}
	rows, err := tx.query(ctx, `SELECT path, text, kind, from_path, interval, lorry_timeout, generated, commit_id,
		runtime_name, runtime_version, runtime_id, runtime_python, schedule, upstream_url,
		max_backoff, hard_fail_after, queue FROM lorries WHERE path IN (SELECT value FROM json_each(?))`, string(list))
	if err != nil {
		return nil, fmt.Errorf("read lorries: %w", err)
	}
	defer rows.Close()
	out := make(map[string]configHave, len(want))
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
	for _, p := range kept.Paths {
		if _, err := tx.exec(ctx, `INSERT OR IGNORE INTO temp.config_seen (path) VALUES (?)`, p); err != nil {
			return fmt.Errorf("keep lorry %q: %w", p, err)
		}
	}
	for _, f := range kept.FromPaths {
		if _, err := tx.exec(ctx, `INSERT OR IGNORE INTO temp.config_seen (path)
			SELECT path FROM lorries WHERE from_path = ? AND generated = 0`, f); err != nil {
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
func (tx *Tx) RemoveUnseenLorries(ctx context.Context, after string, limit int) (int, string, error) {
	rows, err := tx.query(ctx, `SELECT path FROM lorries
		WHERE path > ? AND generated = 0 AND path NOT IN (SELECT path FROM temp.config_seen)
		ORDER BY path LIMIT ?`, after, limit)
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
		if _, err := tx.exec(ctx, `DELETE FROM lorries WHERE path = ?`, p); err != nil {
			return 0, "", fmt.Errorf("remove lorry %q: %w", p, err)
		}
	}
	if len(paths) < limit {
		return len(paths), "", nil
	}
	return len(paths), paths[len(paths)-1], nil
}

// LorryListing selects one page of lorries in path order, for tools that
// walk a long run queue a page at a time (ListLorries).
type LorryListing struct {
	// State, if set, is one of States.
	State string
	// Queue, if set, is the queue the lorries are in.
	Queue string
	// Prefix, if set, begins every path. It is a plain string: no
	// character in it is a wildcard.
	Prefix string
	// After, if set, is the path the previous page ended at; the page
	// begins after it.
	After string
	// Limit is the most lorries the page holds, at least 1.
	Limit int
}

// ListLorries returns the page of lorries that q selects, in path order,
// and the path to give as q.After for the next page: "" when none follows.
// The page is one search of an index from its first path (the primary
// key, or by state or queue lorries_state_path or lorries_queue_path), so
// that a page costs the same at the end of 100,000 lorries as at their
// start, and a filter with few matches reads only those.
func (tx *Tx) ListLorries(ctx context.Context, q LorryListing) ([]Lorry, string, error) {
	if q.State != "" && !slices.Contains(States, q.State) {
		return nil, "", fmt.Errorf("lorry state %q is none of %s: %w", q.State, strings.Join(States, ", "), ErrInvalid)
	}
	if q.Limit < 1 {
		return nil, "", fmt.Errorf("page of %d lorries: %w", q.Limit, ErrInvalid)
	}
	query, args := listLorriesQuery(q)
	out, err := tx.queryLorries(ctx, "list lorries", query, args...)
	if err != nil {
		return nil, "", err
	}
	if len(out) <= q.Limit {
		return out, "", nil
	}
	out = out[:q.Limit]
	return out, out[len(out)-1].Path, nil
}

// listLorriesQuery is ListLorries' query for q and its arguments. Only
// the filters given are in it: one condition that holds every filter, as
// LorryPage's does, keeps SQLite from searching an index by any of them.
func listLorriesQuery(q LorryListing) (string, []any) {
	// One lower bound only, the later of the two: given both, SQLite
	// would search from one of them and test the other on every row, and
	// a walk from a prefix's start to its end would read its first pages
	// again for every page.
	where, args := []string{`path > ?`}, []any{q.After}
	if q.Prefix != "" && q.Prefix > q.After {
		where, args = []string{`path >= ?`}, []any{q.Prefix}
	}
	if end, ok := prefixEnd(q.Prefix); ok {
		where, args = append(where, `path < ?`), append(args, end)
	}
	if q.State != "" {
		where, args = append(where, `state = ?`), append(args, q.State)
	}
	if q.Queue != "" {
		where, args = append(where, `queue = ?`), append(args, q.Queue)
	}
	// One more than the page, to tell whether another follows.
	return `SELECT ` + lorryColumns + ` FROM lorries
		WHERE ` + strings.Join(where, ` AND `) + ` ORDER BY path LIMIT ?`, append(args, q.Limit+1)
}

// prefixEnd is the least string greater than every string that begins
// with prefix, in SQLite's byte order, so that "path >= prefix AND path <
// end" is a range of the index on path; ok is false when there is none
// (an empty prefix, or one of 0xff bytes only).
func prefixEnd(prefix string) (end string, ok bool) {
	b := []byte(prefix)
	for len(b) > 0 && b[len(b)-1] == 0xff {
		b = b[:len(b)-1]
	}
	if len(b) == 0 {
		return "", false
	}
	b[len(b)-1]++
	return string(b), true
}

// Pages of the run queue: a long queue is read a page at a time, so that
// a reader stays quick with 100,000 lorries.

// Lorry states a LorryFilter can select.
const (
	LorryDue     = "due"     // no running job and next_due has passed
	LorryFailing = "failing" // the last run failed
	LorryRunning = "running" // a job runs now
	LorryNever   = "never"   // never run
)

// LorryFilter selects lorries of the run queue. The zero value selects
// all of them.
type LorryFilter struct {
	// Path, if set, must occur in the lorry's path; ASCII letters match
	// either case.
	Path string
	// State, if set, is one of LorryDue, LorryFailing, LorryRunning and
	// LorryNever.
	State string
	// Kind, if set, is the entry's kind, such as "lorry" or "scraper".
	Kind string
}

// Valid says whether f's State is one the queries know.
func (f LorryFilter) Valid() error {
	switch f.State {
	case "", LorryDue, LorryFailing, LorryRunning, LorryNever:
		return nil
	}
	return fmt.Errorf("lorry state %q: %w", f.State, ErrInvalid)
}

// lorryFilterWhere is one constant condition for every filter, so that
// prepared statements serve them all, whatever is asked. Failing is CountLorries'
// definition: a non-zero exit, or an error without one (a lost job).
const lorryFilterWhere = `(?1 = '' OR path LIKE ?2 ESCAPE '\')
	AND (?3 = ''
		OR (?3 = 'due' AND running_job IS NULL AND next_due <= ?4)
		OR (?3 = 'failing' AND (last_run_exit IS NOT NULL AND last_run_exit != 0 OR last_run_error != ''))
		OR (?3 = 'running' AND running_job IS NOT NULL)
		OR (?3 = 'never' AND last_run IS NULL))
	AND (?5 = '' OR kind = ?5)`

func (f LorryFilter) args(now int64) []any {
	return []any{f.Path, likePattern(f.Path), f.State, now, f.Kind}
}

// likePattern makes s a LIKE pattern matching any text that contains s.
func likePattern(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(s) + "%"
}

// LorryPage returns at most limit lorries that f selects, in queue order,
// skipping the first offset of them.
func (tx *Tx) LorryPage(ctx context.Context, f LorryFilter, offset, limit int) ([]Lorry, error) {
	if err := f.Valid(); err != nil {
		return nil, err
	}
	if f == failingOnly {
		return tx.FailingLorries(ctx, offset, limit)
	}
	// The whole queue is read in the order of its index, which stops at
	// the page. A filtered one is read whole and its matches sorted: the
	// index would fetch each of 100,000 rows in turn to test it.
	query := `SELECT ` + lorryColumns + ` FROM lorries INDEXED BY lorries_queue
		WHERE ` + lorryFilterWhere + ` ORDER BY queue_pos LIMIT ?6 OFFSET ?7`
	if f != (LorryFilter{}) {
		query = `SELECT ` + lorryColumns + ` FROM lorries NOT INDEXED
		WHERE ` + lorryFilterWhere + ` ORDER BY queue_pos LIMIT ?6 OFFSET ?7`
	}
	return tx.queryLorries(ctx, "list lorries", query, append(f.args(tx.Now), limit, offset)...)
}

// LorriesAfter returns at most limit lorries of the run queue in queue
// order, from the first whose queue position is after pos. It walks the
// queue's index from pos, so a caller that reads the queue a page at a
// time, with the last position of each page, never reads it twice.
func (tx *Tx) LorriesAfter(ctx context.Context, pos int64, limit int) ([]Lorry, error) {
	return tx.queryLorries(ctx, "list lorries", `SELECT `+lorryColumns+` FROM lorries INDEXED BY lorries_queue
		WHERE queue_pos > ? ORDER BY queue_pos LIMIT ?`, pos, limit)
}

// failingOnly is the filter that the lorries_failing index answers.
var failingOnly = LorryFilter{State: LorryFailing}

// FailingLorries returns at most limit lorries whose last run failed, in
// queue order, skipping the first offset of them. Failing is
// CountLorries' definition: a non-zero exit, or an error without one (a
// lost job). An index holds them, so this is quick wherever in a long
// queue they are.
func (tx *Tx) FailingLorries(ctx context.Context, offset, limit int) ([]Lorry, error) {
	return tx.queryLorries(ctx, "list failing lorries", `SELECT `+lorryColumns+` FROM lorries INDEXED BY lorries_failing
		WHERE last_run_exit != 0 OR last_run_error != '' ORDER BY queue_pos LIMIT ? OFFSET ?`, limit, offset)
}

// CountLorriesMatching counts the lorries that f selects.
func (tx *Tx) CountLorriesMatching(ctx context.Context, f LorryFilter) (int64, error) {
	if err := f.Valid(); err != nil {
		return 0, err
	}
	var n int64
	var err error
	if f == failingOnly {
		err = tx.queryRow(ctx, `SELECT COUNT(*) FROM lorries INDEXED BY lorries_failing
			WHERE last_run_exit != 0 OR last_run_error != ''`).Scan(&n)
	} else {
		err = tx.queryRow(ctx, `SELECT COUNT(*) FROM lorries WHERE `+lorryFilterWhere, f.args(tx.Now)...).Scan(&n)
	}
	if err != nil {
		return 0, fmt.Errorf("count lorries: %w", err)
	}
	return n, nil
}

// QueuePosition is the 1-based place of the lorry at path in the run
// queue.
func (tx *Tx) QueuePosition(ctx context.Context, path string) (int64, error) {
	var n int64
	err := tx.queryRow(ctx, `SELECT COUNT(*) FROM lorries
		WHERE queue_pos <= (SELECT queue_pos FROM lorries WHERE path = ?)`, path).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("place of lorry %q: %w", path, err)
	}
	if n == 0 {
		return 0, fmt.Errorf("no lorry %q: %w", path, ErrNotFound)
	}
	return n, nil
}

// queryLorries runs query, which selects lorryColumns, and returns its
// lorries; what names the list in errors.
func (tx *Tx) queryLorries(ctx context.Context, what, query string, args ...any) ([]Lorry, error) {
	rows, err := tx.query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer rows.Close()
	out := []Lorry{}
	for rows.Next() {
		l, err := scanLorry(rows)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}
