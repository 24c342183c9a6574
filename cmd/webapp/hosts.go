package main

import (
	"context"
	"log/slog"

	"lorrycontroller/confgit"
	"lorrycontroller/hosts"
	"lorrycontroller/routes"
	"lorrycontroller/statedb"
)

// hostLister lists an Upstream Host with the hosts package and turns its
// repositories into lorries of the section's interval and timeout.
func hostLister(log *slog.Logger) routes.HostLister {
	return func(ctx context.Context, h confgit.Host) ([]statedb.NewLorry, []string, error) {
		l, err := hosts.NewLister(h, hosts.ListerOptions{Logger: log.With("host", h.Name)})
		if err != nil {
			return nil, nil, err
		}
		repos, err := l.List(ctx)
		if err != nil {
			return nil, nil, err
		}
		gen, skipped := hosts.Generate(h, repos)
		lorries := make([]statedb.NewLorry, len(gen))
		for i, g := range gen {
			lorries[i] = statedb.NewLorry{
				Path: g.Path, Text: g.Text, Kind: routes.KindLorry, FromPath: g.FromPath,
				Interval: int64(h.Interval.Seconds()), Timeout: int64(h.Timeout.Seconds()),
				Description: g.Description, DefaultBranch: g.DefaultBranch,
			}
		}
		return lorries, skipped, nil
	}
}

// checkHost rejects a host section that its lister would refuse.
func checkHost(h confgit.Host) error {
	_, err := hosts.NewLister(h, hosts.ListerOptions{})
	return err
}
