package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"lorrycontroller.dev/lc/control"
	"lorrycontroller.dev/lc/statedb"
)

// checkStateDBOnCommandLine refuses a --statedb or --backup-statedb with
// a password or another secret given on the command line
// (statedb.HoldsSecret), which any user of the machine can read: it
// belongs in --statedb-password-file, the --config file, or PGPASSFILE.
func checkStateDBOnCommandLine(args []string) error {
	for i, a := range args {
		if a == "--" {
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if name != "statedb" && name != "backup-statedb" || !strings.HasPrefix(a, "-") {
			continue
		}
		if !hasValue && i+1 < len(args) {
			value = args[i+1]
		}
		if statedb.HoldsSecret(value) {
			return fmt.Errorf("--%s %s: a password on the command line is readable by every user of the machine; put it in --statedb-password-file, the --config file or PGPASSFILE (a literal @ in a parameter is written %%40)",
				name, statedb.Redact(value))
		}
	}
	return nil
}

// replicaOf is how this WEBAPP is known to the others: --replica-name and
// --replica-url, or the host's name and port and the listening address.
func replicaOf(cfg Config, addr string) control.Replica {
	r := control.Replica{Name: cfg.ReplicaName, URL: cfg.ReplicaURL}
	_, port, _ := net.SplitHostPort(addr)
	if r.Name == "" {
		host, _ := os.Hostname()
		r.Name = host + ":" + port
	}
	if r.URL == "" {
		r.URL = "http://" + addr
	}
	return r
}

// heartbeat records that this WEBAPP is alive now and every interval
// until the returned function is called.
func heartbeat(ctx context.Context, app *control.App, interval time.Duration, log *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	started := time.Now()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			if err := app.Heartbeat(ctx, started); err != nil && ctx.Err() == nil {
				log.Warn("heartbeat", "err", err)
			}
			before := app.DB.ClockOffset()
			if off, err := app.DB.SyncClock(ctx); err != nil && ctx.Err() == nil {
				log.Warn("read the STATEDB server's clock", "err", err)
			} else if err == nil && (off-before).Abs() >= time.Second {
				warnClockOffset(off, log)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() { cancel(); wg.Wait() }
}

// warnClockOffset says when this machine's clock is a second or more off
// the STATEDB server's, which the WEBAPP's times follow.
func warnClockOffset(off time.Duration, log *slog.Logger) {
	if off.Abs() >= time.Second {
		log.Warn("this machine's clock differs from the STATEDB server's; the WEBAPP keeps the server's time", "server_ahead_ms", off.Milliseconds())
	}
}
