package routes

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"lorrycontroller/confgit"
	"lorrycontroller/forgehook"
	"lorrycontroller/hosts/downstream"
	"lorrycontroller/hosts/upstream"
	"lorrycontroller/redact"
	"lorrycontroller/statedb"
)

// HostLister lists an Upstream Host and returns the lorries its
// repositories make, and notes on repositories it skipped.
type HostLister func(ctx context.Context, h confgit.Host) (lorries []statedb.NewLorry, skipped []string, err error)

// NewHostLister lists Upstream Hosts with the upstream package and turns
// their repositories into lorries of the section's interval and timeout.
func NewHostLister(opts upstream.ListerOptions) HostLister {
	return func(ctx context.Context, h confgit.Host) ([]statedb.NewLorry, []string, error) {
		if len(h.Prefixmap) == 0 {
			// Every repository would be skipped, each said so at length.
			return nil, nil, errors.New(`the host section has no "prefixmap", so none of its repositories is mirrored`)
		}
		l, err := upstream.NewLister(h, opts)
		if err != nil {
			return nil, nil, err
		}
		repos, err := l.List(ctx)
		if err != nil {
			return nil, nil, err
		}
		gen, skipped := upstream.Generate(h, repos)
		lorries := make([]statedb.NewLorry, len(gen))
		for i, g := range gen {
			lorries[i] = statedb.NewLorry{
				Path: g.Path, Text: g.Text, Kind: KindLorry, FromPath: g.FromPath,
				Interval: int64(h.Interval.Seconds()), Timeout: int64(h.Timeout.Seconds()),
				Description: g.Description, DefaultBranch: g.DefaultBranch,
				UpstreamURL: forgehook.SpecURL(g.Text),
				MaxBackoff:  int64(h.MaxBackoff.Seconds()), HardFailAfter: h.HardFailAfter,
			}
		}
		return lorries, skipped, nil
	}
}

// CheckHostSection refuses a host section that no lister could list with
// the options it would be given.
func CheckHostSection(h confgit.Host) error {
	_, err := upstream.NewLister(h, upstream.ListerOptions{})
	return err
}

// lsResult is what listing one host did.
type lsResult struct {
	Host    string   `json:"host"`
	OK      bool     `json:"ok"`
	Repos   int      `json:"repos"`
	Added   int      `json:"added"`
	Changed int      `json:"changed"`
	Removed int      `json:"removed"`
	Skipped []string `json:"skipped"`
	// Vanished says what became of the downstream repositories of the
	// repositories gone from the listing, by the host's on-vanish.
	Vanished []vanishResult `json:"vanished,omitempty"`
	Error    string         `json:"error,omitempty"`
}

// vanishResult is what was done to the downstream repository of one
// lorry whose repository vanished from its host's listing.
type vanishResult struct {
	Path   string `json:"path"`
	Action string `json:"action"` // kept, archived or deleted
	Error  string `json:"error,omitempty"`
}

func (s *Server) lsHosts(force bool) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		res, err := s.listDueHosts(r.Context(), force)
		if err != nil {
			return err
		}
		return ok(w, map[string][]lsResult{"hosts": res})
	}
}

// listDueHosts lists the upstream hosts whose ls-interval has passed (all of
// them if force) and applies each listing to the run queue in its own
// transaction. Listing happens outside any transaction, so a slow upstream
// never holds up the minions. A failed listing is recorded on its host and
// leaves the host's lorries as they were.
func (s *Server) listDueHosts(ctx context.Context, force bool) ([]lsResult, error) {
	// One listing at a time: two at once would only race to apply the
	// same answers.
	s.lsMu.Lock()
	defer s.lsMu.Unlock()
	var due []statedb.Host
	err := s.DB.View(ctx, func(tx *statedb.Tx) error {
		all, err := tx.Hosts(ctx)
		for _, h := range all {
			if force || h.Relist || h.LastLs == nil || tx.Now >= *h.LastLs+h.LsInterval {
				due = append(due, h)
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	results := []lsResult{}
	for _, h := range due {
		results = append(results, s.listHost(ctx, h))
	}
	return results, nil
}

func (s *Server) listHost(ctx context.Context, stored statedb.Host) lsResult {
	res := lsResult{Host: stored.Name, Skipped: []string{}}
	start := time.Now()
	lorries, skipped, err := s.listHostLorries(ctx, stored)
	if err != nil {
		res.Error = redact.URLs(err.Error())
		s.Log.Error("list host", "host", stored.Name, "err", res.Error)
		if err := s.DB.Update(ctx, func(tx *statedb.Tx) error {
			if err := tx.RecordListing(ctx, stored.Name, statedb.HostListing{Error: res.Error}); err != nil {
				return err
			}
			return tx.Notify(ctx, statedb.EventHostListingFailed, statedb.HostListingFailed{Host: stored.Name, Error: res.Error})
		}); err != nil {
			s.Log.Error("record listing", "host", stored.Name, "err", err)
		}
		return res
	}
	listed := time.Since(start)
	var ch statedb.LorryChanges
	var clashes, vanished []string
	err = s.DB.Update(ctx, func(tx *statedb.Tx) error {
		before, err := tx.HostLorryPaths(ctx, stored.Name)
		if err != nil {
			return err
		}
		if ch, clashes, err = tx.SetHostLorries(ctx, stored.Name, lorries); err != nil {
			return err
		}
		listed := make(map[string]bool, len(lorries))
		for _, l := range lorries {
			listed[l.Path] = true
		}
		vanished = vanished[:0]
		for _, p := range before {
			if !listed[p] {
				vanished = append(vanished, p)
			}
		}
		return tx.RecordListing(ctx, stored.Name, statedb.HostListing{Repos: int64(len(lorries))})
	})
	if err != nil {
		res.Error = "applying the listing failed; see the WEBAPP log"
		s.Log.Error("apply listing", "host", stored.Name, "err", err)
		return res
	}
	for _, p := range clashes {
		skipped = append(skipped, p+": the path is already a lorry of the configuration or of another host")
	}
	res.OK, res.Repos, res.Skipped = true, len(lorries), append(res.Skipped, skipped...)
	res.Added, res.Changed, res.Removed = ch.Added, ch.Changed, ch.Removed
	if len(vanished) > 0 {
		res.Vanished = s.retireVanished(ctx, stored, vanished)
	}
	s.Log.Info("host listed", "host", stored.Name, "repos", len(lorries), "added", ch.Added,
		"changed", ch.Changed, "removed", ch.Removed, "skipped", len(skipped),
		"list_ms", listed.Milliseconds(), "total_ms", time.Since(start).Milliseconds())
	return res
}

// retireVanished does to the downstream repositories of the lorries at
// paths, whose repositories vanished from the listing of host, what the
// host's on-vanish says, and records it on the host. It runs outside any
// transaction: the downstream may be slow.
func (s *Server) retireVanished(ctx context.Context, host statedb.Host, paths []string) []vanishResult {
	policy := confgit.OnVanishKeep
	if h, err := confgit.ParseHostSection(host.Section); err == nil {
		policy = h.OnVanish
	}
	retirer, can := s.Downstream.(downstream.Retirer)
	out := make([]vanishResult, len(paths))
	var summary []string
	for i, p := range paths {
		r := vanishResult{Path: p, Action: "kept"}
		var err error
		switch {
		case policy == confgit.OnVanishKeep:
		case !can:
			r.Error = "the downstream cannot archive or delete repositories"
		case policy == confgit.OnVanishArchive:
			if err = retirer.Archive(ctx, p); err == nil {
				r.Action = "archived"
			}
		case policy == confgit.OnVanishDelete:
			if err = retirer.Delete(ctx, p); err == nil {
				r.Action = "deleted"
			}
		}
		if err != nil {
			r.Error = redact.URLs(err.Error())
		}
		if r.Error != "" {
			s.Log.Warn("vanished repository", "host", host.Name, "path", p, "on_vanish", policy,
				"action", r.Action, "err", r.Error)
			summary = append(summary, fmt.Sprintf("%s %s (%s: %s)", r.Action, p, policy, r.Error))
		} else {
			s.Log.Info("vanished repository", "host", host.Name, "path", p, "on_vanish", policy, "action", r.Action)
			summary = append(summary, r.Action+" "+p)
		}
		out[i] = r
	}
	// The hosts page shows the first few; the log has them all.
	const shown = 20
	if len(summary) > shown {
		summary = append(summary[:shown], fmt.Sprintf("and %d more (see the log)", len(summary)-shown))
	}
	err := s.DB.Update(ctx, func(tx *statedb.Tx) error {
		return tx.RecordVanished(ctx, host.Name, strings.Join(summary, "; "))
	})
	if err != nil {
		s.Log.Error("record vanished repositories", "host", host.Name, "err", err)
	}
	return out
}

func (s *Server) listHostLorries(ctx context.Context, stored statedb.Host) ([]statedb.NewLorry, []string, error) {
	if s.ListHost == nil {
		return nil, nil, errorf(http.StatusNotImplemented, "this WEBAPP cannot list upstream hosts")
	}
	h, err := confgit.ParseHostSection(stored.Section)
	if err != nil {
		return nil, nil, err
	}
	return s.ListHost(ctx, h)
}
