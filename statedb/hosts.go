package statedb

import (
	"context"
	"database/sql"
	"fmt"
)

// Host is an Upstream Host section of the configuration and the state of
// its listing. Section holds the whole section, secrets included: it is
// for the listing code only and must never be shown.
type Host struct {
	Name        string
	Type        string
	Protocol    string
	LsInterval  int64
	Interval    int64
	Timeout     int64
	Section     string
	LastLs      *int64
	LastLsError string
	Repos       int64
	// Relist says the section changed since the last listing, so the host
	// is to be listed again without waiting for its ls-interval.
	Relist bool
	// Vanished says what the last listing that found repositories gone
	// did to their downstream repositories, by the on-vanish policy.
	Vanished string
}

// Hosts lists the upstream hosts by name.
func (tx *Tx) Hosts(ctx context.Context) ([]Host, error) {
	rows, err := tx.query(ctx, `SELECT name, type, protocol, ls_interval, interval, lorry_timeout,
		section, last_ls, last_ls_error, repos, relist, vanished FROM hosts ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list hosts: %w", err)
	}
	defer rows.Close()
	out := []Host{}
	for rows.Next() {
		var h Host
		var last sql.NullInt64
		if err := rows.Scan(&h.Name, &h.Type, &h.Protocol, &h.LsInterval, &h.Interval, &h.Timeout,
			&h.Section, &last, &h.LastLsError, &h.Repos, &h.Relist, &h.Vanished); err != nil {
			return nil, fmt.Errorf("list hosts: %w", err)
		}
		h.LastLs = nullInt(last)
		out = append(out, h)
	}
	return out, rows.Err()
}

// SetConfigHosts makes the stored hosts exactly want, keeping the listing
// state of hosts that stay. A host whose section changed has its lorries'
// interval and timeout changed at once, and is listed again at the next
// ls-troves for the rest (prefixmap, ignore, credentials). A host that
// vanishes takes its generated lorries with it; their running jobs are left
// to finish.
func (tx *Tx) SetConfigHosts(ctx context.Context, want []Host) (removed int, err error) {
	keep := make(map[string]bool, len(want))
	for _, h := range want {
		if keep[h.Name] {
			return 0, fmt.Errorf("host %q given twice: %w", h.Name, ErrInvalid)
		}
		keep[h.Name] = true
		_, err := tx.exec(ctx, `INSERT INTO hosts (name, type, protocol, ls_interval, interval, lorry_timeout, section)
			VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (name) DO UPDATE SET type = excluded.type, protocol = excluded.protocol,
				ls_interval = excluded.ls_interval, interval = excluded.interval,
				lorry_timeout = excluded.lorry_timeout, section = excluded.section,
				relist = CASE WHEN hosts.relist != 0 OR hosts.section != excluded.section THEN 1 ELSE 0 END`,
			h.Name, h.Type, h.Protocol, h.LsInterval, h.Interval, h.Timeout, h.Section)
		if err != nil {
			return 0, fmt.Errorf("store host %q: %w", h.Name, err)
		}
		_, err = tx.exec(ctx, `UPDATE lorries SET interval = $1, lorry_timeout = $2,
				next_due = CASE WHEN last_run IS NULL THEN next_due ELSE last_run + $3 END, `+resetStreak+`
			WHERE generated = 1 AND from_host = $4 AND (interval != $5 OR lorry_timeout != $6)`,
			h.Interval, h.Timeout, h.Interval, h.Name, h.Interval, h.Timeout)
		if err != nil {
			return 0, fmt.Errorf("update lorries of host %q: %w", h.Name, err)
		}
	}
	have, err := tx.Hosts(ctx)
	if err != nil {
		return 0, err
	}
	for _, h := range have {
		if keep[h.Name] {
			continue
		}
		if _, err := tx.exec(ctx, `DELETE FROM lorries WHERE generated = 1 AND from_host = $1`, h.Name); err != nil {
			return 0, fmt.Errorf("remove lorries of host %q: %w", h.Name, err)
		}
		if _, err := tx.exec(ctx, `DELETE FROM hosts WHERE name = $1`, h.Name); err != nil {
			return 0, fmt.Errorf("remove host %q: %w", h.Name, err)
		}
		removed++
	}
	return removed, nil
}

// Host returns the upstream host called name.
func (tx *Tx) Host(ctx context.Context, name string) (Host, error) {
	hosts, err := tx.Hosts(ctx)
	if err != nil {
		return Host{}, err
	}
	for _, h := range hosts {
		if h.Name == name {
			return h, nil
		}
	}
	return Host{}, fmt.Errorf("no host %q: %w", name, ErrNotFound)
}

// HostListing is the outcome of listing an upstream host.
type HostListing struct {
	Repos int64  // repositories listed
	Error string // why the listing failed; "" if it did not
}

// RecordListing notes that host was listed now, with what outcome. A
// failed listing leaves the host's lorries as they were.
func (tx *Tx) RecordListing(ctx context.Context, host string, l HostListing) error {
	var res sql.Result
	var err error
	if l.Error != "" {
		res, err = tx.exec(ctx, `UPDATE hosts SET last_ls = $1, last_ls_error = $2, relist = 0 WHERE name = $3`, tx.Now, l.Error, host)
	} else {
		res, err = tx.exec(ctx, `UPDATE hosts SET last_ls = $1, last_ls_error = '', repos = $2, relist = 0 WHERE name = $3`, tx.Now, l.Repos, host)
	}
	if err != nil {
		return fmt.Errorf("record listing of %q: %w", host, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("no host %q: %w", host, ErrNotFound)
	}
	return nil
}

// HostLorryPaths returns the paths of the lorries generated from host.
func (tx *Tx) HostLorryPaths(ctx context.Context, host string) ([]string, error) {
	rows, err := tx.query(ctx, `SELECT path FROM lorries WHERE generated = 1 AND from_host = $1 ORDER BY path`, host)
	if err != nil {
		return nil, fmt.Errorf("read lorries of host %q: %w", host, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			return nil, fmt.Errorf("read lorries of host %q: %w", host, err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// RecordVanished notes what was done to the downstream repositories of
// the repositories that vanished from host's last listing.
func (tx *Tx) RecordVanished(ctx context.Context, host, what string) error {
	if _, err := tx.exec(ctx, `UPDATE hosts SET vanished = $1 WHERE name = $2`, what, host); err != nil {
		return fmt.Errorf("record vanished repositories of %q: %w", host, err)
	}
	return nil
}

// SetHostLorries makes the lorries generated from host exactly want: new
// ones are added at the end of the queue, vanished ones removed (their
// running jobs are left to finish; what becomes of their downstream
// repositories is the caller's to do, outside the transaction, from
// HostLorryPaths read before), changed ones updated in place. A path that a lorry from the
// configuration or from another host already has is not taken; it is
// returned in clashes.
func (tx *Tx) SetHostLorries(ctx context.Context, host string, want []NewLorry) (ch LorryChanges, clashes []string, err error) {
	existing, others, err := tx.hostLorriesHave(ctx, host)
	if err != nil {
		return ch, nil, err
	}
	var bottom int64
	if err := tx.queryRow(ctx, `SELECT COALESCE(MAX(queue_pos), -1) FROM lorries`).Scan(&bottom); err != nil {
		return ch, nil, fmt.Errorf("read queue: %w", err)
	}

	wanted := make(map[string]bool, len(want))
	for _, l := range want {
		if wanted[l.Path] {
			return ch, nil, fmt.Errorf("lorry %q given twice: %w", l.Path, ErrInvalid)
		}
		wanted[l.Path] = true
		h, ok := existing[l.Path]
		maxBackoff, hardFail := l.backoffSettings()
		switch {
		case others[l.Path]:
			clashes = append(clashes, l.Path)
		case !ok:
			bottom++
			_, err := tx.exec(ctx, `INSERT INTO lorries (path, text, kind, generated, from_host, from_path,
					interval, lorry_timeout, queue_pos, running_job, next_due, description, default_branch, upstream_url,
					max_backoff, hard_fail_after)
				VALUES ($1, $2, $3, 1, $4, $5, $6, $7, $8, (SELECT id FROM jobs WHERE path = $9 AND status IN ('claimed', 'running')), $10, $11, $12, $13, $14, $15)`,
				l.Path, l.Text, l.Kind, host, l.FromPath, l.Interval, l.Timeout, bottom, l.Path, tx.Now, l.Description, l.DefaultBranch,
				l.UpstreamURL, maxBackoff, hardFail)
			if err != nil {
				return ch, nil, fmt.Errorf("add lorry %q: %w", l.Path, err)
			}
			ch.Added++
		case h.text != l.Text || h.fromPath != l.FromPath || h.interval != l.Interval || h.timeout != l.Timeout ||
			h.description != l.Description || h.defaultBranch != l.DefaultBranch:
			// A changed spec ends a failure streak.
			_, err := tx.exec(ctx, `UPDATE lorries SET text = $1, kind = $2, from_path = $3, interval = $4,
					lorry_timeout = $5, description = $6, default_branch = $7, upstream_url = $8,
					next_due = CASE WHEN last_run IS NULL THEN next_due ELSE last_run + $9 END, `+resetStreak+`,
					max_backoff = $10, hard_fail_after = $11
				WHERE path = $12`,
				l.Text, l.Kind, l.FromPath, l.Interval, l.Timeout, l.Description, l.DefaultBranch, l.UpstreamURL, l.Interval,
				maxBackoff, hardFail, l.Path)
			if err != nil {
				return ch, nil, fmt.Errorf("update lorry %q: %w", l.Path, err)
			}
			ch.Changed++
		case h.upstreamURL != l.UpstreamURL || h.maxBackoff != maxBackoff || h.hardFail != hardFail:
			// Upstream URLs (of a database made before they were stored)
			// and the backoff settings alone are no change of spec.
			_, err := tx.exec(ctx, `UPDATE lorries SET upstream_url = $1, max_backoff = $2, hard_fail_after = $3 WHERE path = $4`,
				l.UpstreamURL, maxBackoff, hardFail, l.Path)
			if err != nil {
				return ch, nil, fmt.Errorf("update lorry %q: %w", l.Path, err)
			}
			ch.Unchanged++
		default:
			ch.Unchanged++
		}
	}
	for p := range existing {
		if wanted[p] {
			continue
		}
		if _, err := tx.exec(ctx, `DELETE FROM lorries WHERE path = $1`, p); err != nil {
			return ch, nil, fmt.Errorf("remove lorry %q: %w", p, err)
		}
		ch.Removed++
	}
	if err := tx.syncHostQueue(ctx, host); err != nil {
		return ch, nil, err
	}
	return ch, clashes, nil
}

// hostHave is what SetHostLorries compares of a stored lorry.
type hostHave struct {
	text, fromHost, fromPath, description, defaultBranch string
	interval, timeout                                    int64
	upstreamURL                                          string
	maxBackoff, hardFail                                 int64
}

// hostLorriesHave reads the lorries generated from host, and the paths of
// all the others.
func (tx *Tx) hostLorriesHave(ctx context.Context, host string) (map[string]hostHave, map[string]bool, error) {
	// Only this host's lorries are read whole; of the others (a queue may
	// hold 100,000) only the paths, to see clashes: this runs with the
	// write lock held.
	existing := make(map[string]hostHave)
	rows, err := tx.query(ctx, `SELECT path, text, from_host, from_path, description, default_branch,
		interval, lorry_timeout, upstream_url, max_backoff, hard_fail_after FROM lorries WHERE generated = 1 AND from_host = $1`, host)
	if err != nil {
		return nil, nil, fmt.Errorf("read lorries: %w", err)
	}
	for rows.Next() {
		var p string
		var h hostHave
		if err := rows.Scan(&p, &h.text, &h.fromHost, &h.fromPath, &h.description, &h.defaultBranch,
			&h.interval, &h.timeout, &h.upstreamURL, &h.maxBackoff, &h.hardFail); err != nil {
			rows.Close()
			return nil, nil, fmt.Errorf("read lorries: %w", err)
		}
		existing[p] = h
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("read lorries: %w", err)
	}
	others := make(map[string]bool)
	rows, err = tx.query(ctx, `SELECT path FROM lorries WHERE NOT (generated = 1 AND from_host = $1)`, host)
	if err != nil {
		return nil, nil, fmt.Errorf("read lorries: %w", err)
	}
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			rows.Close()
			return nil, nil, fmt.Errorf("read lorries: %w", err)
		}
		others[p] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("read lorries: %w", err)
	}
	return existing, others, nil
}
