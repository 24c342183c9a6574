package main

import (
	"context"
	"log/slog"
	"net/http"
	"strings"

	"lorrycontroller.dev/lc/periodic"
	"lorrycontroller.dev/lc/systemd"
)

// background is the work the WEBAPP does besides serving requests: the
// watchdog, the delivery of notifications and, with --periodic-work, the
// timers' work.
type background struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// startBackground starts the watchdog if systemd asks for one
// (WatchdogSec=), and the periodic work if cfg asks for it. The watchdog
// checks the WEBAPP through h, its own routes; the periodic work calls
// work, its operations. deliver, if not nil, delivers notifications.
func startBackground(ctx context.Context, cfg Config, h http.Handler, work periodic.Work, deliver func(context.Context), log *slog.Logger) *background {
	ctx, cancel := context.WithCancel(ctx)
	b := &background{cancel: cancel, done: make(chan struct{})}
	var runs []func(context.Context)
	if wd := systemd.NewWatchdog(h, log); wd != nil {
		log.Info("watchdog on", "ping_every", wd.Every.String())
		runs = append(runs, wd.Run)
	}
	if cfg.PeriodicWork {
		p := &periodic.Runner{Work: work, Tasks: periodic.Tasks, Log: log}
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
