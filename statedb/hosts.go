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
}

// Hosts lists the upstream hosts by name.
func (tx *Tx) Hosts(ctx context.Context) ([]Host, error) {
	rows, err := tx.query(ctx, `SELECT name, type, protocol, ls_interval, interval, lorry_timeout,
		section, last_ls, last_ls_error, repos FROM hosts ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list hosts: %w", err)
	}
	defer rows.Close()
	out := []Host{}
	for rows.Next() {
		var h Host
		var last sql.NullInt64
		if err := rows.Scan(&h.Name, &h.Type, &h.Protocol, &h.LsInterval, &h.Interval, &h.Timeout,
			&h.Section, &last, &h.LastLsError, &h.Repos); err != nil {
			return nil, fmt.Errorf("list hosts: %w", err)
		}
		h.LastLs = nullInt(last)
		out = append(out, h)
	}
	return out, rows.Err()
}

// SetConfigHosts makes the stored hosts exactly want, keeping the listing
// state of hosts that stay. A host that vanishes takes its generated
// lorries with it; their running jobs are left to finish.
func (tx *Tx) SetConfigHosts(ctx context.Context, want []Host) (removed int, err error) {
	keep := make(map[string]bool, len(want))
	for _, h := range want {
		if keep[h.Name] {
			return 0, fmt.Errorf("host %q given twice: %w", h.Name, ErrInvalid)
		}
		keep[h.Name] = true
		_, err := tx.exec(ctx, `INSERT INTO hosts (name, type, protocol, ls_interval, interval, lorry_timeout, section)
			VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET type = excluded.type, protocol = excluded.protocol,
				ls_interval = excluded.ls_interval, interval = excluded.interval,
				lorry_timeout = excluded.lorry_timeout, section = excluded.section`,
			h.Name, h.Type, h.Protocol, h.LsInterval, h.Interval, h.Timeout, h.Section)
		if err != nil {
			return 0, fmt.Errorf("store host %q: %w", h.Name, err)
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
		if _, err := tx.exec(ctx, `DELETE FROM lorries WHERE generated = 1 AND from_host = ?`, h.Name); err != nil {
			return 0, fmt.Errorf("remove lorries of host %q: %w", h.Name, err)
		}
		if _, err := tx.exec(ctx, `DELETE FROM hosts WHERE name = ?`, h.Name); err != nil {
			return 0, fmt.Errorf("remove host %q: %w", h.Name, err)
		}
		removed++
	}
	return removed, nil
}
