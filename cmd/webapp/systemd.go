package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/coreos/go-systemd/v22/activation"
	"github.com/coreos/go-systemd/v22/daemon"
)

// listen returns the listeners to serve on: the sockets systemd passed
// (socket activation, LISTEN_FDS), else one bound to addr. A socket unit
// takes the place of --listen; the WEBAPP serves on its sockets just the
// same.
func listen(addr string) (lns []net.Listener, activated bool, err error) {
	passed, err := activation.Listeners()
	if err != nil {
		return nil, false, fmt.Errorf("socket activation: %w", err)
	}
	for _, ln := range passed {
		if ln != nil {
			lns = append(lns, ln)
		}
	}
	if len(passed) > 0 {
		if len(lns) == 0 {
			return nil, true, errors.New("socket activation: systemd passed no stream socket")
		}
		return lns, true, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, false, err
	}
	return []net.Listener{ln}, false, nil
}

// serve serves hs on every listener; the channel gets the first error.
func serve(hs *http.Server, lns []net.Listener) <-chan error {
	errc := make(chan error, len(lns))
	for _, ln := range lns {
		go func() { errc <- hs.Serve(ln) }()
	}
	return errc
}

// notify tells systemd how the WEBAPP is doing (sd_notify). Without
// NOTIFY_SOCKET, when systemd did not start it as Type=notify, it does
// nothing.
func notify(log *slog.Logger, state string) {
	if _, err := daemon.SdNotify(false, state); err != nil {
		log.Warn("notify systemd", "state", state, "err", err)
	}
}

// background is the work the WEBAPP does besides serving requests: the
// watchdog, the delivery of notifications and, with --periodic-work, the
// timers' work.
type background struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// startBackground starts the watchdog if systemd asks for one
// (WatchdogSec=), and the periodic work if cfg asks for it. Both go through
// h, the WEBAPP's own routes. deliver, if not nil, delivers notifications.
func startBackground(ctx context.Context, cfg Config, h http.Handler, deliver func(context.Context), log *slog.Logger) *background {
	ctx, cancel := context.WithCancel(ctx)
	b := &background{cancel: cancel, done: make(chan struct{})}
	var runs []func(context.Context)
	interval, err := daemon.SdWatchdogEnabled(false)
	if err != nil {
		log.Warn("watchdog", "err", err)
	}
	if interval > 0 {
		wd := &watchdog{every: interval / 2, check: selfCheck(h), log: log, ping: func() error {
			_, err := daemon.SdNotify(false, daemon.SdNotifyWatchdog)
			return err
		}}
		log.Info("watchdog on", "ping_every", wd.every.String())
		runs = append(runs, wd.Run)
	}
	if cfg.PeriodicWork {
		p := &periodic{h: h, tasks: periodicTasks, log: log}
		log.Info("doing the periodic work in-process")
		runs = append(runs, p.Run)
	}
	if deliver != nil {
		log.Info("delivering notifications", "events", strings.Join(eventNames(cfg.NotifyEvents), ","))
		runs = append(runs, deliver)
	}
	go func() {
		defer close(b.done)
		finished := make(chan struct{}, len(runs))
		for _, run := range runs {
			go func() { run(ctx); finished <- struct{}{} }()
		}
		for range runs {
			<-finished
		}
	}()
	return b
}

// stop ends the background work and waits for it, so that nothing uses the
// database after it is closed. It may be called more than once.
func (b *background) stop() {
	b.cancel()
	<-b.done
}

// watchdog pings systemd's watchdog while the WEBAPP answers its own health
// check, so that systemd restarts a WEBAPP that hangs or whose database
// stopped answering, not only one that died.
type watchdog struct {
	every time.Duration
	check func(ctx context.Context) error
	ping  func() error
	log   *slog.Logger
}

// Run checks and pings every w.every until ctx ends.
func (w *watchdog) Run(ctx context.Context) {
	t := time.NewTicker(w.every)
	defer t.Stop()
	for {
		w.runOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// runOnce pings the watchdog if the health check passes, and says whether
// it did.
func (w *watchdog) runOnce(ctx context.Context) bool {
	cctx, cancel := context.WithTimeout(ctx, w.every)
	defer cancel()
	if err := w.check(cctx); err != nil {
		if ctx.Err() == nil {
			w.log.Error("health check failed; not pinging the watchdog", "err", err)
		}
		return false
	}
	if err := w.ping(); err != nil {
		w.log.Warn("ping the watchdog", "err", err)
		return false
	}
	return true
}

// selfCheck asks h for /1.0/health-check as a client would, so that a ping
// means the routes and the database answer.
func selfCheck(h http.Handler) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		code, body, err := serveInProcess(ctx, h, http.MethodGet, "/1.0/health-check")
		if err != nil {
			return err
		}
		if code != http.StatusOK {
			return fmt.Errorf("health check answered %d: %s", code, body)
		}
		return nil
	}
}
