// Package periodic does the WEBAPP's periodic work in-process
// (--periodic-work): the work of the calls to its own API that the timer
// units make on a systemd installation, at the same intervals, so that
// nothing depends on timers being there. Each task calls the operation
// that its timer's route calls.
package periodic

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"lorrycontroller.dev/lc/control"
)

// Task is one piece of the periodic work of the original design: on a
// systemd installation the timer unit lorry-controller-<Name>.timer makes
// its call to the API.
type Task struct {
	Name   string
	Method string
	Path   string
	// Args are the key=value parameters of the call, "" for none.
	Args  string
	Every time.Duration
	// AtStart tasks also run when the WEBAPP starts, in order: the WEBAPP's
	// unit pulls their services in for the same reason.
	AtStart bool
	// Do is the task's work: what its route does.
	Do func(context.Context, Work) error
}

// Work is what the tasks do: the WEBAPP's operations, which
// *routes.Server has.
type Work interface {
	ApplyConfiguration(ctx context.Context) (control.ConfigResult, error)
	ListDueHosts(ctx context.Context, force bool) ([]control.HostListing, error)
	RemoveGhostJobs(ctx context.Context) ([]int64, error)
	RemoveOldJobs(ctx context.Context, maxAge *int64) (removed, age int64, err error)
	Backup(ctx context.Context, keep int) (control.BackupResult, error)
	// WriteStatusPage writes the on-disk copy of the status page.
	WriteStatusPage(ctx context.Context) error
}

// Tasks are the timers' work. A test checks them against the timer units.
var Tasks = []Task{
	// Read CONFGIT at start (RC/START) and now and then; the CONFGIT hook
	// asks at once after each push.
	{Name: "read-configuration", Method: http.MethodPost, Path: "/1.0/read-configuration", Every: 5 * time.Minute, AtStart: true,
		Do: func(ctx context.Context, w Work) error { _, err := w.ApplyConfiguration(ctx); return err }},
	// Rewrite the on-disk status page at least once a minute (MON/STATIC).
	{Name: "status-html", Method: http.MethodGet, Path: "/1.0/status-html", Every: time.Minute, AtStart: true,
		Do: func(ctx context.Context, w Work) error { return w.WriteStatusPage(ctx) }},
	// Each host's ls-interval decides whether it is listed.
	{Name: "ls-troves", Method: http.MethodPost, Path: "/1.0/ls-troves", Every: time.Minute,
		Do: func(ctx context.Context, w Work) error { _, err := w.ListDueHosts(ctx, false); return err }},
	{Name: "remove-ghost-jobs", Method: http.MethodPost, Path: "/1.0/remove-ghost-jobs", Every: 5 * time.Minute,
		Do: func(ctx context.Context, w Work) error { _, err := w.RemoveGhostJobs(ctx); return err }},
	{Name: "remove-old-jobs", Method: http.MethodPost, Path: "/1.0/remove-old-jobs", Every: 24 * time.Hour,
		Do: func(ctx context.Context, w Work) error { _, _, err := w.RemoveOldJobs(ctx, nil); return err }},
	// A backup of the state database a day, the last week kept. A WEBAPP
	// with no --backup-directory takes none: it was not asked to.
	{Name: "backup", Method: http.MethodPost, Path: "/1.0/backup", Args: "keep=7", Every: 24 * time.Hour,
		Do: func(ctx context.Context, w Work) error {
			_, err := w.Backup(ctx, 7)
			if errors.Is(err, control.ErrNoBackupDirectory) {
				return nil
			}
			return err
		}},
}

// Runner does Tasks with Work, the operations the timers' calls make.
type Runner struct {
	Work  Work
	Tasks []Task
	Log   *slog.Logger
}

// Run does the AtStart tasks, then each task at its interval, each in its
// own goroutine so that a slow host listing never holds up the status page,
// until ctx ends.
func (r *Runner) Run(ctx context.Context) {
	for _, t := range r.Tasks {
		if t.AtStart && ctx.Err() == nil {
			r.runTask(ctx, t)
		}
	}
	var wg sync.WaitGroup
	for _, t := range r.Tasks {
		wg.Go(func() {
			tick := time.NewTicker(t.Every)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
					r.runTask(ctx, t)
				}
			}
		})
	}
	wg.Wait()
}

// runOnce does every task once, in order, and returns the failures.
func (r *Runner) runOnce(ctx context.Context) []error {
	var errs []error
	for _, t := range r.Tasks {
		if err := r.runTask(ctx, t); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

func (r *Runner) runTask(ctx context.Context, t Task) error {
	start := time.Now()
	if err := t.Do(ctx, r.Work); err != nil {
		if ctx.Err() == nil {
			r.Log.Warn("periodic work failed", "task", t.Name, "err", err)
		}
		return fmt.Errorf("%s: %w", t.Name, err)
	}
	r.Log.Debug("periodic work done", "task", t.Name, "duration_ms", time.Since(start).Milliseconds())
	return nil
}
