package control

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"lorrycontroller.dev/lc/confgit"
	"lorrycontroller.dev/lc/forgehook"
	"lorrycontroller.dev/lc/hosts/downstream"
	"lorrycontroller.dev/lc/hosts/upstream"
	"lorrycontroller.dev/lc/redact"
	"lorrycontroller.dev/lc/statedb"
	"lorrycontroller.dev/lc/wire"
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
				Path: g.Path, Text: g.Text, Kind: wire.KindLorry, FromPath: g.FromPath,
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

// HostListing is what listing one host did.
type HostListing struct {
	Host    string
	OK      bool
	Repos   int
	Added   int
	Changed int
	Removed int
	Skipped []string
	// Vanished says what became of the downstream repositories of the
	// repositories gone from the listing, by the host's on-vanish.
	Vanished []Vanished
	Error    string
}

// Vanished is what was done to the downstream repository of one lorry
// whose repository vanished from its host's listing.
type Vanished struct {
	Path   string
	Action string // kept, archived or deleted
	Error  string
}

// ListDueHosts lists the upstream hosts whose ls-interval has passed (all of
// them if force) and applies each listing to the run queue in its own
// transaction. Listing happens outside any transaction, so a slow upstream
// never holds up the minions. A failed listing is recorded on its host and
// leaves the host's lorries as they were.
//
// One listing at a time, by any process: two at once would only race to
// apply the same answers. It holds the lease LeaseListing throughout,
// renewed before each host and in the transaction that
// applies its listing. If another process holds the lease, the periodic
// listing (not force) skips its round and lists nothing; a forced one
// waits up to LeaseWait and then answers an ErrBusy error.
func (a *App) ListDueHosts(ctx context.Context, force bool) ([]HostListing, error) {
	a.lsMu.Lock()
	defer a.lsMu.Unlock()
	var wait time.Duration
	if force {
		wait = a.leaseWait()
	}
	ctx, ok, err := a.takeLease(ctx, LeaseListing, wait)
	if err != nil {
		return nil, err
	}
	if !ok {
		if force {
			return nil, busy("listing the Upstream Hosts")
		}
		return []HostListing{}, nil
	}
	defer a.releaseLease(ctx, LeaseListing)
	var due []statedb.Host
	err = a.DB.View(ctx, func(tx *statedb.Tx) error {
		all, err := tx.Hosts(ctx)
		due = nil // fn may run again (statedb.DB.View)
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
	results := []HostListing{}
	for _, h := range due {
		// The lease is renewed before each host, as this process took it:
		// one taken by another since, this process frozen, ends the round.
		l, _ := a.heldLeaseOf(LeaseListing)
		if err := a.DB.RenewLease(ctx, l, a.leaseTerm(LeaseListing)); err != nil {
			return results, err
		}
		results = append(results, a.listHost(ctx, h))
	}
	return results, nil
}

func (a *App) listHost(ctx context.Context, stored statedb.Host) HostListing {
	res := HostListing{Host: stored.Name, Skipped: []string{}}
	start := time.Now()
	lorries, skipped, err := a.listHostLorries(ctx, stored)
	if err != nil {
		res.Error = redact.URLs(err.Error())
		a.Log.Error("list host", "host", stored.Name, "err", res.Error)
		if err := a.DB.Update(ctx, func(tx *statedb.Tx) error {
			if err := a.checkLease(ctx, tx, LeaseListing); err != nil {
				return err
			}
			if err := tx.RecordListing(ctx, stored.Name, statedb.HostListing{Error: res.Error}); err != nil {
				return err
			}
			return tx.Notify(ctx, statedb.EventHostListingFailed, statedb.HostListingFailed{Host: stored.Name, Error: res.Error})
		}); err != nil {
			a.Log.Error("record listing", "host", stored.Name, "err", err)
		}
		return res
	}
	listed := time.Since(start)
	var ch statedb.LorryChanges
	var clashes, vanished []string
	err = a.DB.Update(ctx, func(tx *statedb.Tx) error {
		if err := a.checkLease(ctx, tx, LeaseListing); err != nil {
			return err
		}
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
		a.Log.Error("apply listing", "host", stored.Name, "err", err)
		return res
	}
	for _, p := range clashes {
		skipped = append(skipped, p+": the path is already a lorry of the configuration or of another host")
	}
	res.OK, res.Repos, res.Skipped = true, len(lorries), append(res.Skipped, skipped...)
	res.Added, res.Changed, res.Removed = ch.Added, ch.Changed, ch.Removed
	if len(vanished) > 0 {
		res.Vanished = a.retireVanished(ctx, stored, vanished)
	}
	a.Log.Info("host listed", "host", stored.Name, "repos", len(lorries), "added", ch.Added,
		"changed", ch.Changed, "removed", ch.Removed, "skipped", len(skipped),
		"list_ms", listed.Milliseconds(), "total_ms", time.Since(start).Milliseconds())
	return res
}

// retireVanished does to the downstream repositories of the lorries at
// paths, whose repositories vanished from the listing of host, what the
// host's on-vanish says, and records it on the host. It runs outside any
// transaction: the downstream may be slow.
func (a *App) retireVanished(ctx context.Context, host statedb.Host, paths []string) []Vanished {
	policy := confgit.OnVanishKeep
	if h, err := confgit.ParseHostSection(host.Section); err == nil {
		policy = h.OnVanish
	}
	retirer, can := a.Downstream.(downstream.Retirer)
	out := make([]Vanished, len(paths))
	var summary []string
	for i, p := range paths {
		r := Vanished{Path: p, Action: "kept"}
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
			a.Log.Warn("vanished repository", "host", host.Name, "path", p, "on_vanish", policy,
				"action", r.Action, "err", r.Error)
			summary = append(summary, fmt.Sprintf("%s %s (%s: %s)", r.Action, p, policy, r.Error))
		} else {
			a.Log.Info("vanished repository", "host", host.Name, "path", p, "on_vanish", policy, "action", r.Action)
			summary = append(summary, r.Action+" "+p)
		}
		out[i] = r
	}
	// The hosts page shows the first few; the log has them all.
	const shown = 20
	if len(summary) > shown {
		summary = append(summary[:shown], fmt.Sprintf("and %d more (see the log)", len(summary)-shown))
	}
	err := a.DB.Update(ctx, func(tx *statedb.Tx) error {
		if err := a.checkLease(ctx, tx, LeaseListing); err != nil {
			return err
		}
		return tx.RecordVanished(ctx, host.Name, strings.Join(summary, "; "))
	})
	if err != nil {
		a.Log.Error("record vanished repositories", "host", host.Name, "err", err)
	}
	return out
}

func (a *App) listHostLorries(ctx context.Context, stored statedb.Host) ([]statedb.NewLorry, []string, error) {
	if a.ListHost == nil {
		return nil, nil, errors.New("this WEBAPP cannot list upstream hosts")
	}
	h, err := confgit.ParseHostSection(stored.Section)
	if err != nil {
		return nil, nil, err
	}
	return a.ListHost(ctx, h)
}
