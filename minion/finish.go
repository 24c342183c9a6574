package minion

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"lorrycontroller.dev/lc/workarea"
)

// stopTries is how many times the final update of a job is attempted once
// the minion has been told to stop, and stopTimeout bounds each attempt:
// the minion should exit promptly, but the WEBAPP should learn how the job
// ended rather than time it out as a ghost.
const (
	stopTries   = 3
	stopTimeout = 5 * time.Second
)

// finish delivers the rest of the output and the end of the job: retried
// until the WEBAPP has it, or until ctx is done, after which a few quick
// tries are made. A backlog too large for one update goes first in
// running updates, so that only the last one carries the exit.
func (m *Minion) finish(ctx context.Context, log *slog.Logger, j *job, exit int, out *output) {
	if exit != 0 && ctx.Err() != nil {
		// The minion is stopping: it killed the job (watch), or the stop
		// reached the job's processes with the minion's, as systemd's
		// KillMode=control-group sends its SIGTERM to every process of
		// the unit at once. Either way the job did not fail of itself, and
		// the WEBAPP ends it as killed, not as a failure of its lorry.
		j.stopping = true
		out.add(nil, []byte("lorry-controller-minion: the minion is stopping: job killed\n"))
	}
	var du *int64
	duDir := j.duDir
	if duDir == "" {
		duDir = workarea.Dir(m.cfg.WorkingArea, j.Path)
	}
	n, err := workarea.DiskUsage(duDir)
	if err != nil {
		log.Warn("cannot measure disk usage", "err", err)
	} else {
		du = &n
	}
	log = log.With("exit", exit)

	budget := maxUpdateBody - formSpace
	// deliver sends the next piece, and says whether it was the last.
	deliver := func(ctx context.Context) (bool, error) {
		u, last := out.next(budget, true)
		e, d := updateRunning, (*int64)(nil)
		if last {
			e, d = exit, du
		}
		_, err := m.jobUpdate(ctx, j, e, u, d)
		var gap *outputGap
		switch {
		case err == nil:
			out.sent(u)
			return last, nil
		case errors.As(err, &gap):
			out.rewind(gap.stdout, gap.stderr)
			log.Warn("webapp lacks output sent before; sending from what it has", "err", err)
			return false, nil
		case tooLarge(err) && budget > minUpdateBody:
			budget = max(budget/2, minUpdateBody)
			log.Warn("webapp found the update too large; sending less at a time", "err", err, "budget", budget)
			return false, nil
		}
		return false, err
	}

	bo := m.newBackoff()
	for ctx.Err() == nil {
		done, err := deliver(ctx)
		switch {
		case done:
			log.Info("job finished", "disk_usage", n)
			return
		case err == nil:
			bo.reset()
		case ctx.Err() != nil:
		case retryable(err) || tooLarge(err):
			wait := bo.next()
			log.Warn("webapp unreachable; will retry final update", "err", err, "retry_in", wait)
			sleep(ctx, wait)
		default:
			log.Error("webapp refused final update", "err", err)
			return
		}
	}

	// Told to stop: the caller's context is done, but the WEBAPP should
	// still hear how the job ended.
	stopCtx := context.WithoutCancel(ctx)
	for try := 1; try <= stopTries; {
		tctx, cancel := context.WithTimeout(stopCtx, stopTimeout)
		done, err := deliver(tctx)
		cancel()
		switch {
		case done:
			log.Info("job finished", "disk_usage", n)
			return
		case err == nil:
			continue
		case !retryable(err) && !tooLarge(err):
			log.Error("webapp refused final update", "err", err)
			return
		}
		log.Warn("final update failed", "err", err, "try", try)
		if try < stopTries {
			time.Sleep(time.Duration(try) * 100 * time.Millisecond)
		}
		try++
	}
	log.Error("final update not delivered; the webapp will treat the job as lost")
}
