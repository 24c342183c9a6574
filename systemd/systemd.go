// Package systemd is the WEBAPP's side of systemd: the sockets a socket
// unit passes, the states it notifies (sd_notify), and a watchdog that
// pings only while the WEBAPP answers its own health check. Without
// systemd, each of them stands aside.
package systemd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/coreos/go-systemd/v22/activation"
	"github.com/coreos/go-systemd/v22/daemon"

	"lorrycontroller.dev/lc/routes"
)

// Listen returns the listeners to serve on: the sockets systemd passed
// (socket activation, LISTEN_FDS), else one bound to addr. A socket unit
// takes the place of --listen; the WEBAPP serves on its sockets just the
// same.
func Listen(addr string) (lns []net.Listener, activated bool, err error) {
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

// Serve serves hs on every listener; the channel gets the first error.
func Serve(hs *http.Server, lns []net.Listener) <-chan error {
	errc := make(chan error, len(lns))
	for _, ln := range lns {
		go func() { errc <- hs.Serve(ln) }()
	}
	return errc
}

// Notify tells systemd how the WEBAPP is doing (sd_notify). Without
// NOTIFY_SOCKET, when systemd did not start it as Type=notify, it does
// nothing.
func Notify(log *slog.Logger, state string) {
	if _, err := daemon.SdNotify(false, state); err != nil {
		log.Warn("notify systemd", "state", state, "err", err)
	}
}

// Watchdog pings systemd's watchdog while the WEBAPP answers its own health
// check, so that systemd restarts a WEBAPP that hangs or whose database
// stopped answering, not only one that died.
type Watchdog struct {
	Every time.Duration
	Check func(ctx context.Context) error
	Ping  func() error
	Log   *slog.Logger
}

// NewWatchdog returns the watchdog that systemd asks for (WatchdogSec=),
// pinging at half its timeout while h answers its health check; nil if
// systemd asks for none.
func NewWatchdog(h http.Handler, log *slog.Logger) *Watchdog {
	interval, err := daemon.SdWatchdogEnabled(false)
	if err != nil {
		log.Warn("watchdog", "err", err)
	}
	if interval <= 0 {
		return nil
	}
	return &Watchdog{Every: interval / 2, Check: SelfCheck(h), Log: log, Ping: func() error {
		_, err := daemon.SdNotify(false, daemon.SdNotifyWatchdog)
		return err
	}}
}

// Run checks and pings every w.Every until ctx ends.
func (w *Watchdog) Run(ctx context.Context) {
	t := time.NewTicker(w.Every)
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
func (w *Watchdog) runOnce(ctx context.Context) bool {
	cctx, cancel := context.WithTimeout(ctx, w.Every)
	defer cancel()
	if err := w.Check(cctx); err != nil {
		if ctx.Err() == nil {
			w.Log.Error("health check failed; not pinging the watchdog", "err", err)
		}
		return false
	}
	if err := w.Ping(); err != nil {
		w.Log.Warn("ping the watchdog", "err", err)
		return false
	}
	return true
}

// SelfCheck asks h for /1.0/health-check as a client would, so that a ping
// means the routes and the database answer.
func SelfCheck(h http.Handler) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		code, body, err := routes.ServeInProcess(ctx, h, http.MethodGet, "/1.0/health-check")
		if err != nil {
			return err
		}
		if code != http.StatusOK {
			return fmt.Errorf("health check answered %d: %s", code, body)
		}
		return nil
	}
}
