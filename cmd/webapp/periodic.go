package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"lorrycontroller/routes"
)

// task is one piece of the periodic work of the original design: on a
// systemd installation the timer unit lorry-controller-<name>.timer makes
// its call to the API; with --periodic-work the WEBAPP makes it itself, at
// the same interval, so that nothing depends on timers being there.
type task struct {
	name   string
	method string
	path   string
	every  time.Duration
	// atStart tasks also run when the WEBAPP starts, in order: the WEBAPP's
	// unit pulls their services in for the same reason.
	atStart bool
}

// periodicTasks are the timers' work. A test checks them against the timer
// units.
var periodicTasks = []task{
	// Read CONFGIT at start (RC/START) and now and then; the CONFGIT hook
	// asks at once after each push.
	{name: "read-configuration", method: http.MethodPost, path: "/1.0/read-configuration", every: 5 * time.Minute, atStart: true},
	// Rewrite the on-disk status page at least once a minute (MON/STATIC).
	{name: "status-html", method: http.MethodGet, path: "/1.0/status-html", every: time.Minute, atStart: true},
	// Each host's ls-interval decides whether it is listed.
	{name: "ls-troves", method: http.MethodPost, path: "/1.0/ls-troves", every: time.Minute},
	{name: "remove-ghost-jobs", method: http.MethodPost, path: "/1.0/remove-ghost-jobs", every: 5 * time.Minute},
	{name: "remove-old-jobs", method: http.MethodPost, path: "/1.0/remove-old-jobs", every: 24 * time.Hour},
}

// periodic does the tasks through h, the WEBAPP's own routes, so that the
// work and its logs are those of the timers' calls.
type periodic struct {
	h     http.Handler
	tasks []task
	log   *slog.Logger
}

// Run does the atStart tasks, then each task at its interval, each in its
// own goroutine so that a slow host listing never holds up the status page,
// until ctx ends.
func (p *periodic) Run(ctx context.Context) {
	for _, t := range p.tasks {
		if t.atStart && ctx.Err() == nil {
			p.runTask(ctx, t)
		}
	}
	var wg sync.WaitGroup
	for _, t := range p.tasks {
		wg.Go(func() {
			tick := time.NewTicker(t.every)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
					p.runTask(ctx, t)
				}
			}
		})
	}
	wg.Wait()
}

// runOnce does every task once, in order, and returns the failures.
func (p *periodic) runOnce(ctx context.Context) []error {
	var errs []error
	for _, t := range p.tasks {
		if err := p.runTask(ctx, t); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

func (p *periodic) runTask(ctx context.Context, t task) error {
	start := time.Now()
	code, body, err := serveInProcess(ctx, p.h, t.method, t.path)
	if err == nil && code >= 400 {
		err = fmt.Errorf("answered %d: %s", code, body)
	}
	if err != nil {
		if ctx.Err() == nil {
			p.log.Warn("periodic work failed", "task", t.name, "err", err)
		}
		return fmt.Errorf("%s: %w", t.name, err)
	}
	p.log.Debug("periodic work done", "task", t.name, "status", code, "duration_ms", time.Since(start).Milliseconds())
	return nil
}

// maxAnswer is how much of an answer serveInProcess keeps for messages.
const maxAnswer = 2048

// serveInProcess makes a request to h without a network round trip and
// returns the status code and the start of the body.
func serveInProcess(ctx context.Context, h http.Handler, method, path string) (int, string, error) {
	req, err := http.NewRequestWithContext(routes.InProcess(ctx), method, path, nil)
	if err != nil {
		return 0, "", err
	}
	req.RemoteAddr = "in-process"
	rec := &recorder{header: http.Header{}}
	h.ServeHTTP(rec, req)
	if rec.code == 0 {
		rec.code = http.StatusOK
	}
	return rec.code, strings.TrimSpace(rec.body.String()), nil
}

// recorder is the response writer of serveInProcess.
type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	if room := maxAnswer - r.body.Len(); room > 0 {
		r.body.Write(b[:min(len(b), room)])
	}
	return len(b), nil
}
