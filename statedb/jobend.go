package statedb

import (
	"context"
	"errors"
	"fmt"

	"lorrycontroller.dev/lc/redact"
)

// StopJob asks the minion running job id to kill it. ErrConflict if the job
// is already over. The job's being live is the write's own guard.
func (tx *Tx) StopJob(ctx context.Context, id int64) error {
	res, err := tx.exec(ctx, `UPDATE jobs SET kill = 1, kill_reason = $1 WHERE id = $2 AND kill = 0 AND `+liveStatus,
		StatusKilled, id)
	if err != nil {
		return fmt.Errorf("stop job %d: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil || n > 0 {
		return err
	}
	j, err := tx.Job(ctx, id)
	if err != nil {
		return err
	}
	if !j.Live() {
		return fmt.Errorf("job %d is %s: %w", id, j.Status, ErrConflict)
	}
	return nil // already asked to
}

// FailJob ends the running job id as failed for a reason of the WEBAPP's,
// such as a downstream repository that could not be made, before any
// minion ran it: its error class is downstream.
func (tx *Tx) FailJob(ctx context.Context, id int64, why string) error {
	j, err := tx.Job(ctx, id)
	if err != nil {
		return err
	}
	if !j.Live() {
		return fmt.Errorf("job %d is %s: %w", id, j.Status, ErrConflict)
	}
	return tx.endReadJob(ctx, j, jobEnd{status: StatusFailed, why: why, class: ClassDownstream})
}

// RemoveJob forgets a finished job and its output. ErrConflict if it still
// runs. The job's being over is the delete's own guard.
func (tx *Tx) RemoveJob(ctx context.Context, id int64) error {
	res, err := tx.exec(ctx, `DELETE FROM jobs WHERE id = $1 AND NOT `+liveStatus, id)
	if err != nil {
		return fmt.Errorf("remove job %d: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil || n > 0 {
		return err
	}
	j, err := tx.Job(ctx, id)
	if err != nil {
		return err
	}
	return fmt.Errorf("job %d is still %s: %w", id, j.Status, ErrConflict)
}

// RemoveGhostJobs ends as lost the live jobs that no minion has reported
// on for longer than timeout seconds, freeing their lorries. A claimed job
// gets that long too, however short the claim timeout.
func (tx *Tx) RemoveGhostJobs(ctx context.Context, timeout int64) ([]int64, error) {
	rows, err := tx.query(ctx, `SELECT `+jobColumns+` FROM jobs WHERE `+liveStatus+` AND updated < $1 ORDER BY id`, tx.Now-timeout)
	if err != nil {
		return nil, fmt.Errorf("find ghost jobs: %w", err)
	}
	var ghosts []Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		ghosts = append(ghosts, j)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	ids := []int64{}
	for _, j := range ghosts {
		msg := fmt.Sprintf("no update from minion %s for %ds; job presumed dead", j.Minion, tx.Now-j.Updated)
		if err := tx.endReadJob(ctx, j, jobEnd{status: StatusLost, why: msg}); err != nil {
			return nil, err
		}
		ids = append(ids, j.ID)
	}
	return ids, nil
}

// RemoveOldJobs forgets finished jobs that ended more than maxAge seconds
// ago, always keeping the newest job of each lorry.
func (tx *Tx) RemoveOldJobs(ctx context.Context, maxAge int64) (int64, error) {
	res, err := tx.exec(ctx, `DELETE FROM jobs WHERE NOT `+liveStatus+` AND ended < $1
		AND id NOT IN (SELECT MAX(id) FROM jobs GROUP BY path)`, tx.Now-maxAge)
	if err != nil {
		return 0, fmt.Errorf("remove old jobs: %w", err)
	}
	return res.RowsAffected()
}

// jobEnd is how a job ends, as endJob records it.
type jobEnd struct {
	status string
	// exit is the job's exit code; nil when it never reported one.
	exit *int64
	// why, if set, is appended to the job's output and explains an end
	// that the job itself did not report.
	why string
	// class is the job's error class; "" when it did not fail or the
	// kind of failure is unknown.
	class string
	// heard says whether the minion itself reported the end, which
	// counts as seeing it.
	heard bool
	// head is the branch the upstream's HEAD names, which a successful
	// end keeps on the lorry; "" when not reported.
	head string
	// lorry, when set, is the job's lorry as the transaction read it,
	// running the job: the end need not read it again.
	lorry *Lorry
}

// holdJob is the first write to the live job j as it was read: it
// refreshes its updated time, if the row is still live and as read (its
// updated time and its output's next chunk), else ErrTaken. What the
// transaction writes of j after it (its output, its end) is counted from
// j, so nothing else may have changed the row since it was read; and a
// writer that read the same row waits here for this one to end, then
// finds it changed.
func (tx *Tx) holdJob(ctx context.Context, j *Job) error {
	res, err := tx.exec(ctx, `UPDATE jobs SET updated = $1
		WHERE id = $2 AND `+liveStatus+` AND updated = $3 AND next_chunk = $4`, tx.Now, j.ID, j.Updated, j.nextChunk)
	if err != nil {
		return fmt.Errorf("hold job %d: %w", j.ID, err)
	}
	if err := taken(res, fmt.Sprintf("job %d: it ended or changed since it was read", j.ID)); err != nil {
		return err
	}
	j.Updated = tx.Now
	return nil
}

// endReadJob is endJob for a job as the transaction read it: it holds the
// job first (holdJob).
func (tx *Tx) endReadJob(ctx context.Context, j Job, e jobEnd) error {
	if err := tx.holdJob(ctx, &j); err != nil {
		return err
	}
	return tx.endJob(ctx, j, e)
}

// endJob finishes j as e says and records the result on its lorry and
// minion.
func (tx *Tx) endJob(ctx context.Context, j Job, e jobEnd) error {
	if err := tx.appendOutput(ctx, &j, finishCR(j.carry)); err != nil {
		return err
	}
	j.carry = nil
	if e.why != "" {
		if err := tx.appendOutput(ctx, &j, []byte("\n"+e.why+"\n")); err != nil {
			return err
		}
	}
	lastErr, err := tx.lastError(ctx, j, e)
	if err != nil {
		return err
	}
	if e.status == StatusOrphaned {
		// The job never ran: it is no run of its lorry, which is due
		// again at once, its last run as it was.
		// A scheduled lorry's due time is kept at or before the instant
		// its schedule was last dealt with, where a tick leaves it due.
		_, err := tx.exec(ctx, tx.q.freeOrphanedLorry, tx.Now, j.Path, j.ID)
		if err != nil {
			return fmt.Errorf("free lorry %q of job %d: %w", j.Path, j.ID, err)
		}
		if err := tx.runAgainAfter(ctx, j.Path); err != nil {
			return err
		}
		return tx.drv.recordEnd(ctx, tx, j, e, "")
	}
	// A job that was not its lorry's run leaves no state of its lorry
	// (endRun records the one it left).
	var l Lorry
	if e.lorry != nil {
		l = *e.lorry
	} else {
		l, err = tx.Lorry(ctx, j.Path)
	}
	if err == nil {
		// The output was redacted by parsing it; the spec's own
		// credentials are hidden too, in every form the output may give
		// them, before the error is kept and sent in notifications.
		lastErr = redact.KnownInJSON(l.Text).Text(lastErr)
	}
	switch {
	case err == nil && l.RunningJob != nil && *l.RunningJob == j.ID:
		return tx.drv.endRun(ctx, tx, l, j, e, lastErr)
	case err != nil && !errors.Is(err, ErrNotFound):
		return err
	case e.status != StatusSucceeded:
		// The lorry was removed, or is another's now: the failure is
		// the job's alone.
		err := tx.Notify(ctx, EventJobFailed, JobFailed{Lorry: j.Path, JobID: j.ID, Kind: j.Kind,
			Status: e.status, Exit: e.exit, Minion: j.Minion, Error: lastErr, ErrorClass: e.class})
		if err != nil {
			return err
		}
	}
	return tx.drv.recordEnd(ctx, tx, j, e, "")
}

// lastError is what j's end e leaves as its lorry's last_run_error: ""
// for a success, else the status, the exit, a lorry-timeout and the tail
// of the output.
func (tx *Tx) lastError(ctx context.Context, j Job, e jobEnd) (string, error) {
	if e.status == StatusSucceeded {
		return "", nil
	}
	tail, err := tx.outputTail(ctx, j.ID, lastErrorBytes)
	if err != nil {
		return "", err
	}
	lastErr := fmt.Sprintf("job %d %s", j.ID, e.status)
	if e.exit != nil {
		lastErr += fmt.Sprintf(" with exit %d", *e.exit)
	}
	if j.KillReason == StatusTimedOut {
		lastErr += fmt.Sprintf(" (lorry-timeout %ds)", j.Timeout)
	}
	if len(tail) > 0 {
		lastErr += ":\n" + string(tail)
	}
	return lastErr, nil
}

// endArgs are the arguments of the statements that end job j as e says,
// leaving its lorry in lorryState: its status, exit, the time, its disk
// usage, output counters, error class, carry, lorry state, id, the
// updated time it was read with, and its streams' counters. A job ends
// once: the row must still be live and as j was read (its updated time
// unchanged), else ErrTaken (endTaken), and the transaction, whatever it
// did to the lorry, is undone.
func endArgs(tx *Tx, j Job, e jobEnd, lorryState string) []any {
	return []any{e.status, e.exit, tx.Now, j.DiskUsage, j.OutputBytes, j.headBytes, j.tailBytes, j.CutBytes,
		j.nextChunk, e.class, []byte{}, lorryState, j.ID, j.Updated, j.stdoutBytes, j.stderrBytes}
}

// endTaken is the error of an end of job j that found it ended or
// changed.
func endTaken(j Job, e jobEnd) error {
	return fmt.Errorf("end job %d as %s: it ended or changed meanwhile: %w", j.ID, e.status, ErrTaken)
}
