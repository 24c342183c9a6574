package statedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"lorrycontroller/wire"
)

// Job states, after Disbatch's task states. A job is live while claimed or
// running; docs/api.md lists them with Disbatch's and Bistro's names.
const (
	// StatusClaimed is a job handed out whose minion has not yet said
	// that its process started.
	StatusClaimed   = "claimed"
	StatusRunning   = "running"
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
	StatusKilled    = "killed"
	StatusTimedOut  = "timed-out"
	StatusLost      = "lost"
	// StatusOrphaned is a claimed job never confirmed within the claim
	// timeout: it never ran, so it does not count as a run.
	StatusOrphaned = "orphaned"
)

// liveStatus is the SQL condition of a live job: claimed or running.
const liveStatus = `status IN ('claimed', 'running')`

// Live says whether the job is claimed or running: not over yet.
func (j Job) Live() bool { return j.Status == StatusClaimed || j.Status == StatusRunning }

// Job is one run of a lorry.
type Job struct {
	ID          int64
	Path        string
	Kind        string
	Minion      string
	Host        string
	PID         int64
	Started     int64
	Updated     int64
	Ended       *int64
	Status      string
	Exit        *int64
	Kill        bool
	KillReason  string
	Timeout     int64
	DiskUsage   *int64
	OutputBytes int64 // bytes received, including any cut
	CutBytes    int64 // bytes dropped from the middle to keep under the cap
	// Text, CommitID and Runtime are the scraper's as it was handed out:
	// a job keeps them however its lorry changes meanwhile.
	Text     string
	CommitID string
	Runtime  Runtime
	// RuntimeBuilt says whether the minion built the runtime for this job
	// (true) or found it built (false), and RuntimeBuildSeconds how long
	// the build took; nil until the minion reports them.
	RuntimeBuilt        *bool
	RuntimeBuildSeconds *float64
	// ErrorClass is the kind of the job's failure, as lorry or the WEBAPP
	// named it; "" when it did not fail or the kind is unknown.
	ErrorClass string
	// LorryState is the state of the lorry's failure streak that the
	// job's end left; "" while it runs, or when the job was no run of it.
	LorryState string

	headBytes, tailBytes, nextChunk int64
	// carry is the end of the output held back from job_output while a
	// carriage return may still rewrite it (see foldCR).
	carry []byte
}

const jobColumns = `id, path, kind, minion, host, pid, started, updated, ended, status,
	exit, kill, kill_reason, timeout, disk_usage, output_bytes, cut_bytes,
	head_bytes, tail_bytes, next_chunk, text, commit_id, runtime_name, runtime_version,
	runtime_id, runtime_python, runtime_built, runtime_build_seconds, error_class, lorry_state,
	output_carry`

func scanJob(row scanner) (Job, error) {
	var j Job
	var ended, exit, du sql.NullInt64
	var built sql.NullBool
	var buildSecs sql.NullFloat64
	err := row.Scan(&j.ID, &j.Path, &j.Kind, &j.Minion, &j.Host, &j.PID, &j.Started,
		&j.Updated, &ended, &j.Status, &exit, &j.Kill, &j.KillReason, &j.Timeout, &du,
		&j.OutputBytes, &j.CutBytes, &j.headBytes, &j.tailBytes, &j.nextChunk,
		&j.Text, &j.CommitID, &j.Runtime.Name, &j.Runtime.Version, &j.Runtime.ID, &j.Runtime.Python,
		&built, &buildSecs, &j.ErrorClass, &j.LorryState, &j.carry)
	j.Ended, j.Exit, j.DiskUsage = nullInt(ended), nullInt(exit), nullInt(du)
	if built.Valid {
		j.RuntimeBuilt = &built.Bool
	}
	if buildSecs.Valid {
		j.RuntimeBuildSeconds = &buildSecs.Float64
	}
	return j, err
}

// Job returns the job with the given id.
func (tx *Tx) Job(ctx context.Context, id int64) (Job, error) {
	j, err := scanJob(tx.queryRow(ctx, `SELECT `+jobColumns+` FROM jobs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return j, fmt.Errorf("no job %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return j, fmt.Errorf("read job %d: %w", id, err)
	}
	return j, nil
}

func (tx *Tx) jobIDs(ctx context.Context, query string, args ...any) ([]int64, error) {
	rows, err := tx.query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	defer rows.Close()
	ids := []int64{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("list jobs: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// JobIDs lists every remembered job, oldest first.
func (tx *Tx) JobIDs(ctx context.Context) ([]int64, error) {
	return tx.jobIDs(ctx, `SELECT id FROM jobs ORDER BY id`)
}

// RunningJobIDs lists the live jobs, claimed or running, oldest first.
func (tx *Tx) RunningJobIDs(ctx context.Context) ([]int64, error) {
	return tx.jobIDs(ctx, `SELECT id FROM jobs WHERE `+liveStatus+` ORDER BY id`)
}

// JobsOfLorry lists the newest jobs of the lorry at path, newest first.
func (tx *Tx) JobsOfLorry(ctx context.Context, path string, limit int) ([]int64, error) {
	return tx.jobIDs(ctx, `SELECT id FROM jobs WHERE path = ? ORDER BY id DESC LIMIT ?`, path, limit)
}

// JobCounts counts jobs by status.
func (tx *Tx) JobCounts(ctx context.Context) (map[string]int64, error) {
	out := map[string]int64{}
	return out, tx.countBy(ctx, out, "jobs", `SELECT status, COUNT(*) FROM jobs GROUP BY status`)
}

// countBy adds to out the counts that query gives, as rows of a key and a
// count; what names what is counted, for errors.
func (tx *Tx) countBy(ctx context.Context, out map[string]int64, what, query string) error {
	rows, err := tx.query(ctx, query)
	if err != nil {
		return fmt.Errorf("count %s: %w", what, err)
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		var n int64
		if err := rows.Scan(&k, &n); err != nil {
			return fmt.Errorf("count %s: %w", what, err)
		}
		out[k] = n
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("count %s: %w", what, err)
	}
	return nil
}

// Assignment is the answer to a minion asking for a job.
type Assignment struct {
	Job   Job
	Lorry Lorry
	// Again is true when the minion already owned this job and asked again,
	// most likely because it never saw the first answer.
	Again bool
	// Idle, when set, says why there is no job: then Job and Lorry are
	// empty.
	Idle string
}

// MinionID names the minion process asking for or reporting on a job.
type MinionID struct {
	Name string
	Host string
	PID  int64
	// Queues, if any, are the only queues the minion takes work from;
	// else it takes any but IgnoreQueues.
	Queues       []string
	IgnoreQueues []string
	// Kinds, if any, are the kinds of entry the minion takes ("lorry",
	// "scraper"); none means every kind.
	Kinds []string
}

// onlyKind is the one kind of entry m takes, or "" when it takes any.
func (m MinionID) onlyKind() string {
	if len(m.Kinds) == 0 || slices.Contains(m.Kinds, "lorry") && slices.Contains(m.Kinds, "scraper") {
		return ""
	}
	return m.Kinds[0]
}

// GiveMeJob hands the first due lorry of the queue to the minion m, within
// max_jobs, the limits of the queues and of m's host and the queues m
// takes (see pickLorry), or
// says in Idle why there is nothing to do. Either way the minion is
// recorded as seen. A minion that asks again
// while it owns a running job gets that job again; a minion that comes back
// with a new pid has its old job ended as lost, since the minion killed what
// was left of the job before asking.
func (tx *Tx) GiveMeJob(ctx context.Context, m MinionID) (Assignment, error) {
	a, err := tx.giveMeJob(ctx, m)
	if err != nil {
		return a, err
	}
	// The minion's row is written once, with the job it has now.
	var job *int64
	if a.Idle == "" {
		job = &a.Job.ID
	}
	return a, tx.touchMinion(ctx, m, job)
}

func (tx *Tx) giveMeJob(ctx context.Context, m MinionID) (Assignment, error) {
	var a Assignment
	rows, err := tx.query(ctx, `SELECT `+jobColumns+` FROM jobs WHERE minion = ? AND `+liveStatus, m.Name)
	if err != nil {
		return a, fmt.Errorf("find jobs of minion %s: %w", m.Name, err)
	}
	var owned []Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			rows.Close()
			return a, err
		}
		owned = append(owned, j)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return a, err
	}
	for _, j := range owned {
		// A minion kills what is left of its job of an earlier run
		// before it asks for work. On another host, the old host's
		// minion does that when it starts again.
		msg := fmt.Sprintf("minion %s restarted (pid %d on %s, was pid %d on %s); it killed what was left of the job",
			m.Name, m.PID, m.Host, j.PID, j.Host)
		if j.Host != m.Host {
			msg = fmt.Sprintf("minion %s restarted on another host (pid %d on %s, was pid %d on %s); the job is lost with the old one",
				m.Name, m.PID, m.Host, j.PID, j.Host)
		}
		if j.Host == m.Host && j.PID == m.PID {
			l, err := tx.Lorry(ctx, j.Path)
			if err == nil {
				return Assignment{Job: j, Lorry: l, Again: true}, nil
			}
			if !errors.Is(err, ErrNotFound) {
				return a, err
			}
			// The minion never saw the job, and its spec is gone with the
			// lorry: the job never ran and never will.
			msg = fmt.Sprintf("the lorry was removed before minion %s started the job", m.Name)
		}
		if err := tx.endJob(ctx, j, StatusLost, nil, msg, "", false); err != nil {
			return a, err
		}
	}

	running, max, err := tx.handOutSettings(ctx)
	if err != nil {
		return a, err
	}
	if !running {
		return Assignment{Idle: "the queue is stopped"}, nil
	}
	// The live jobs are counted once, before the due probe when max_jobs
	// needs them, after it otherwise, so that an idle poll never counts.
	var live *liveCounts
	count := func() error {
		c, err := tx.runningByQueueAndHost(ctx, m.Host)
		live = &c
		return err
	}
	if max != nil {
		if err := count(); err != nil {
			return a, err
		}
		if live.all >= *max {
			return Assignment{Idle: fmt.Sprintf("%d jobs running, max_jobs is %d", live.all, *max)}, nil
		}
	}

	// The partial index answers "is anything due?" at once, so an idle poll
	// never walks the queue; only when something is due is the queue walked
	// in order to find the first one.
	var any int
	err = tx.queryRow(ctx, `SELECT 1 FROM lorries WHERE running_job IS NULL AND next_due <= ? LIMIT 1`, tx.Now).Scan(&any)
	if errors.Is(err, sql.ErrNoRows) {
		return Assignment{Idle: "no lorry is due"}, nil
	}
	if err != nil {
		return a, fmt.Errorf("find due lorry: %w", err)
	}
	if live == nil {
		if err := count(); err != nil {
			return a, err
		}
	}
	l, idle, err := tx.pickLorry(ctx, m, *live)
	if err != nil {
		return a, err
	}
	if idle != "" {
		return Assignment{Idle: idle}, nil
	}

	// A scraper's job keeps its spec, commit and runtime, so that it is
	// handed them again if the minion asks again after CONFGIT moved on.
	var text string
	if l.CommitID != "" {
		text = l.Text
	}
	res, err := tx.exec(ctx, `INSERT INTO jobs (path, kind, minion, host, pid, started, updated, status, timeout,
			text, commit_id, runtime_name, runtime_version, runtime_id, runtime_python, queue)
		VALUES (?, ?, ?, ?, ?, ?, ?, 'claimed', ?, ?, ?, ?, ?, ?, ?, ?)`,
		l.Path, l.Kind, m.Name, m.Host, m.PID, tx.Now, tx.Now, l.Timeout,
		text, l.CommitID, l.Runtime.Name, l.Runtime.Version, l.Runtime.ID, l.Runtime.Python, l.Queue)
	if err != nil {
		return a, fmt.Errorf("create job for %q: %w", l.Path, err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return a, err
	}
	// Handing a lorry out sends it to the back of the queue, so every due
	// lorry gets its turn before any comes round again.
	if _, err := tx.exec(ctx, `UPDATE lorries SET running_job = ?,
			queue_pos = (SELECT MAX(queue_pos) + 1 FROM lorries) WHERE path = ?`, id, l.Path); err != nil {
		return a, fmt.Errorf("mark %q running: %w", l.Path, err)
	}
	l.RunningJob = &id
	j := Job{ID: id, Path: l.Path, Kind: l.Kind, Minion: m.Name, Host: m.Host, PID: m.PID,
		Started: tx.Now, Updated: tx.Now, Status: StatusClaimed, Timeout: l.Timeout,
		Text: text, CommitID: l.CommitID, Runtime: l.Runtime}
	return Assignment{Job: j, Lorry: l}, nil
}

// JobUpdate is what a minion reports about its job.
type JobUpdate struct {
	ID     int64
	Minion MinionID
	// Exit is nil while the job runs, else its exit code: the job is over.
	Exit   *int64
	Stdout []byte
	Stderr []byte
	// CutBytes is how much output the minion cut, just before this
	// update's output, to keep its own copy bounded.
	CutBytes int64
	// Spooled is output too big to hold in memory, appended after Stdout
	// and Stderr, in order.
	Spooled   []OutputSource
	DiskUsage *int64
	// RuntimeBuilt and RuntimeBuildSeconds, when set, say how a scraper's
	// runtime was got ready for the job.
	RuntimeBuilt        *bool
	RuntimeBuildSeconds *float64
	// Head is the branch the upstream's HEAD names, reported with a
	// successful end; "" when not reported. It is kept on the lorry.
	Head string
	// Refs are the refs the job changed, reported with a successful end;
	// nil when not reported. They are kept with the job.
	Refs *wire.RefChanges
	// ErrorClass is the kind of failure lorry found, reported with a
	// failed end; "" when not reported.
	ErrorClass string
}

// UpdateJob records a minion's report: it appends output, keeps the job
// alive, and finishes it when Exit is set. It answers whether the minion
// should kill the job, which is also how a lorry-timeout is delivered.
// ErrNotFound: no such job; ErrConflict: the job is over or belongs to
// another minion.
func (tx *Tx) UpdateJob(ctx context.Context, u JobUpdate) (kill bool, err error) {
	j, err := tx.Job(ctx, u.ID)
	if err != nil {
		return false, err
	}
	if !j.Live() {
		return false, fmt.Errorf("job %d is %s: %w", j.ID, j.Status, ErrConflict)
	}
	if u.Minion.Name != "" && u.Minion.Name != j.Minion {
		return false, fmt.Errorf("job %d belongs to minion %s, not %s: %w", j.ID, j.Minion, u.Minion.Name, ErrConflict)
	}
	if u.Minion.PID != 0 && u.Minion.PID != j.PID {
		return false, fmt.Errorf("job %d belongs to pid %d of minion %s, not %d: %w", j.ID, j.PID, j.Minion, u.Minion.PID, ErrConflict)
	}
	if j.Status == StatusClaimed {
		// The first word from the minion confirms that the process
		// started: the two-phase hand-out's second phase. A first word
		// that is also the last is recorded by the job's end.
		if u.Exit != nil {
			j.Status = StatusRunning
		} else if err := tx.confirmJob(ctx, &j); err != nil {
			return false, err
		}
	}
	if err := tx.skipOutput(ctx, &j, u.CutBytes); err != nil {
		return false, err
	}
	for _, out := range [][]byte{u.Stdout, u.Stderr} {
		if err := tx.appendFolded(ctx, &j, bytesSource(out)); err != nil {
			return false, err
		}
	}
	for _, src := range u.Spooled {
		if err := tx.appendFolded(ctx, &j, src); err != nil {
			return false, err
		}
	}
	if u.DiskUsage != nil {
		j.DiskUsage = u.DiskUsage
	}
	if u.RuntimeBuilt != nil || u.RuntimeBuildSeconds != nil {
		_, err := tx.exec(ctx, `UPDATE jobs SET runtime_built = COALESCE(?, runtime_built),
			runtime_build_seconds = COALESCE(?, runtime_build_seconds) WHERE id = ?`,
			u.RuntimeBuilt, u.RuntimeBuildSeconds, j.ID)
		if err != nil {
			return false, fmt.Errorf("update job %d: %w", j.ID, err)
		}
	}

	if u.Exit != nil {
		status := StatusFailed
		switch {
		case *u.Exit == 0:
			status = StatusSucceeded
		case j.KillReason == StatusTimedOut:
			status = StatusTimedOut
		case j.KillReason == StatusKilled:
			status = StatusKilled
		}
		if status == StatusSucceeded && u.Head != "" {
			_, err := tx.exec(ctx, `UPDATE lorries SET upstream_head = ? WHERE path = ? AND running_job = ?`, u.Head, j.Path, j.ID)
			if err != nil {
				return false, fmt.Errorf("record upstream head of job %d on lorry %q: %w", j.ID, j.Path, err)
			}
		}
		if status == StatusSucceeded && u.Refs != nil {
			if err := tx.setJobRefs(ctx, j.ID, u.Refs); err != nil {
				return false, err
			}
			if u.Refs.Any() {
				if err := tx.Notify(ctx, EventRefsChanged, RefsChanged{Lorry: j.Path, JobID: j.ID, Refs: u.Refs}); err != nil {
					return false, err
				}
			}
		}
		// A lorry that failed without naming the kind of its failure
		// failed in a way it did not foresee.
		class := u.ErrorClass
		if status == StatusFailed && class == "" && j.Kind == "lorry" {
			class = ClassInternal
		}
		if status != StatusFailed {
			class = ""
		}
		return false, tx.endJob(ctx, j, status, u.Exit, "", class, true)
	}

	if _, err := tx.exec(ctx, `UPDATE minions SET last_seen = ?, heard = heard + 1 WHERE name = ?`, tx.Now, j.Minion); err != nil {
		return false, fmt.Errorf("record minion %s: %w", j.Minion, err)
	}
	if !j.Kill && j.Timeout > 0 && tx.Now-j.Started > j.Timeout {
		j.Kill, j.KillReason = true, StatusTimedOut
	}
	_, err = tx.exec(ctx, `UPDATE jobs SET updated = ?, kill = ?, kill_reason = ?, disk_usage = ?,
			output_bytes = ?, head_bytes = ?, tail_bytes = ?, cut_bytes = ?, next_chunk = ?, output_carry = ?
		WHERE id = ?`,
		tx.Now, j.Kill, j.KillReason, j.DiskUsage, j.OutputBytes, j.headBytes, j.tailBytes, j.CutBytes, j.nextChunk,
		carryValue(j.carry), j.ID)
	if err != nil {
		return false, fmt.Errorf("update job %d: %w", j.ID, err)
	}
	return j.Kill, nil
}

// StopJob asks the minion running job id to kill it. ErrConflict if the job
// is already over.
func (tx *Tx) StopJob(ctx context.Context, id int64) error {
	j, err := tx.Job(ctx, id)
	if err != nil {
		return err
	}
	if !j.Live() {
		return fmt.Errorf("job %d is %s: %w", id, j.Status, ErrConflict)
	}
	if j.Kill {
		return nil
	}
	_, err = tx.exec(ctx, `UPDATE jobs SET kill = 1, kill_reason = ? WHERE id = ?`, StatusKilled, id)
	if err != nil {
		return fmt.Errorf("stop job %d: %w", id, err)
	}
	return nil
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
	return tx.endJob(ctx, j, StatusFailed, nil, why, ClassDownstream, false)
}

// RemoveJob forgets a finished job and its output. ErrConflict if it still
// runs.
func (tx *Tx) RemoveJob(ctx context.Context, id int64) error {
	j, err := tx.Job(ctx, id)
	if err != nil {
		return err
	}
	if j.Live() {
		return fmt.Errorf("job %d is still %s: %w", id, j.Status, ErrConflict)
	}
	if _, err := tx.exec(ctx, `DELETE FROM jobs WHERE id = ?`, id); err != nil {
		return fmt.Errorf("remove job %d: %w", id, err)
	}
	return nil
}

// RemoveGhostJobs ends as lost the live jobs that no minion has reported
// on for longer than timeout seconds, freeing their lorries. A claimed job
// gets that long too, however short the claim timeout.
func (tx *Tx) RemoveGhostJobs(ctx context.Context, timeout int64) ([]int64, error) {
	rows, err := tx.query(ctx, `SELECT `+jobColumns+` FROM jobs WHERE `+liveStatus+` AND updated < ? ORDER BY id`, tx.Now-timeout)
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
		if err := tx.endJob(ctx, j, StatusLost, nil, msg, "", false); err != nil {
			return nil, err
		}
		ids = append(ids, j.ID)
	}
	return ids, nil
}

// RemoveOldJobs forgets finished jobs that ended more than maxAge seconds
// ago, always keeping the newest job of each lorry.
func (tx *Tx) RemoveOldJobs(ctx context.Context, maxAge int64) (int64, error) {
	res, err := tx.exec(ctx, `DELETE FROM jobs WHERE NOT `+liveStatus+` AND ended < ?
		AND id NOT IN (SELECT MAX(id) FROM jobs GROUP BY path)`, tx.Now-maxAge)
	if err != nil {
		return 0, fmt.Errorf("remove old jobs: %w", err)
	}
	return res.RowsAffected()
}

// endJob finishes j with status and error class class and records the
// result on its lorry and minion. why, if set, is appended to the job's
// output and explains an end that the job itself did not report. heard
// says whether the minion itself reported the end, which counts as seeing
// it.
func (tx *Tx) endJob(ctx context.Context, j Job, status string, exit *int64, why, class string, heard bool) error {
	if err := tx.appendOutput(ctx, &j, finishCR(j.carry)); err != nil {
		return err
	}
	j.carry = nil
	if why != "" {
		if err := tx.appendOutput(ctx, &j, []byte("\n"+why+"\n")); err != nil {
			return err
		}
	}
	lastErr := ""
	if status != StatusSucceeded {
		tail, err := tx.outputTail(ctx, j.ID, lastErrorBytes)
		if err != nil {
			return err
		}
		lastErr = fmt.Sprintf("job %d %s", j.ID, status)
		if exit != nil {
			lastErr += fmt.Sprintf(" with exit %d", *exit)
		}
		if j.KillReason == StatusTimedOut {
			lastErr += fmt.Sprintf(" (lorry-timeout %ds)", j.Timeout)
		}
		if len(tail) > 0 {
			lastErr += ":\n" + string(tail)
		}
	}
	if status == StatusOrphaned {
		// The job never ran: it is no run of its lorry, which is due
		// again at once, its last run as it was.
		// A scheduled lorry's due time is kept at or before the instant
		// its schedule was last dealt with, where a tick leaves it due.
		_, err := tx.exec(ctx, `UPDATE lorries SET running_job = NULL,
				next_due = CASE WHEN schedule != '' THEN MIN(?1, cron_handled) ELSE ?1 END
			WHERE path = ?2 AND running_job = ?3`,
			tx.Now, j.Path, j.ID)
		if err != nil {
			return fmt.Errorf("free lorry %q of job %d: %w", j.Path, j.ID, err)
		}
		if err := tx.runAgainAfter(ctx, j.Path); err != nil {
			return err
		}
		if err := tx.recordEnd(ctx, j, status, exit, class, ""); err != nil {
			return err
		}
		return tx.freeMinion(ctx, j, heard)
	}
	// lorryState is the state the job left its lorry in, kept with the
	// job; "" when the job was not its lorry's run.
	lorryState := ""
	l, err := tx.Lorry(ctx, j.Path)
	switch {
	case err == nil && l.RunningJob != nil && *l.RunningJob == j.ID:
		again, state, err := tx.recordRun(ctx, l, j, status, exit, lastErr, class)
		if err != nil {
			return err
		}
		lorryState = state
		// Runs asked for while this one ran (pushes, run-now) come to one
		// more, at once, whatever the next due time recordRun set.
		if again {
			if err := tx.makeDueNow(ctx, j.Path); err != nil {
				return err
			}
		}
	case err != nil && !errors.Is(err, ErrNotFound):
		return err
	case status != StatusSucceeded:
		// The lorry was removed, or is another's now: the failure is
		// the job's alone.
		err := tx.Notify(ctx, EventJobFailed, JobFailed{Lorry: j.Path, JobID: j.ID, Kind: j.Kind,
			Status: status, Exit: exit, Minion: j.Minion, Error: lastErr, ErrorClass: class})
		if err != nil {
			return err
		}
	}
	if err := tx.recordEnd(ctx, j, status, exit, class, lorryState); err != nil {
		return err
	}
	return tx.freeMinion(ctx, j, heard)
}

// recordEnd writes the end of job j and what endJob found: its status,
// exit, error class and the state it left its lorry in.
func (tx *Tx) recordEnd(ctx context.Context, j Job, status string, exit *int64, class, lorryState string) error {
	_, err := tx.exec(ctx, `UPDATE jobs SET status = ?, exit = ?, ended = ?, updated = ?, disk_usage = ?,
			output_bytes = ?, head_bytes = ?, tail_bytes = ?, cut_bytes = ?, next_chunk = ?, error_class = ?,
			output_carry = x'', lorry_state = ?
		WHERE id = ?`,
		status, exit, tx.Now, tx.Now, j.DiskUsage, j.OutputBytes, j.headBytes, j.tailBytes, j.CutBytes, j.nextChunk, class,
		lorryState, j.ID)
	if err != nil {
		return fmt.Errorf("end job %d: %w", j.ID, err)
	}
	return nil
}

// freeMinion records that j's minion no longer has it.
func (tx *Tx) freeMinion(ctx context.Context, j Job, heard bool) error {
	var err error
	if heard {
		_, err = tx.exec(ctx, `UPDATE minions SET job_id = NULL, last_seen = ? WHERE name = ? AND job_id = ?`, tx.Now, j.Minion, j.ID)
	} else {
		_, err = tx.exec(ctx, `UPDATE minions SET job_id = NULL WHERE name = ? AND job_id = ?`, j.Minion, j.ID)
	}
	if err != nil {
		return fmt.Errorf("free minion %s: %w", j.Minion, err)
	}
	return nil
}

// Pages of jobs: millions of jobs are read a page at a time.

// JobFilter selects jobs. The zero value selects all of them.
type JobFilter struct {
	// Status, if set, is the job's status (StatusRunning, ...).
	Status string
	// Path, if set, must occur in the job's path; ASCII letters match
	// either case.
	Path string
}

const jobFilterWhere = `(?1 = '' OR status = ?1) AND (?2 = '' OR path LIKE ?3 ESCAPE '\')`

// JobPage is one page of jobs, newest first.
type JobPage struct {
	Jobs []Job
	// Newer and Older say whether jobs that the filter selects come
	// before the first or after the last of Jobs.
	Newer, Older bool
}

// JobsBefore returns at most limit jobs that f selects with ids below
// before, newest first. Paging by id rather than by offset keeps each
// page as quick as the first however many jobs there are, and a page
// does not shift while new jobs start.
func (tx *Tx) JobsBefore(ctx context.Context, f JobFilter, before int64, limit int) (JobPage, error) {
	var p JobPage
	jobs, err := tx.scanJobs(ctx, `SELECT `+jobColumns+` FROM jobs
		WHERE `+jobFilterWhere+` AND id < ?4 ORDER BY id DESC LIMIT ?5`,
		f.Status, f.Path, likePattern(f.Path), before, limit+1)
	if err != nil {
		return p, err
	}
	if len(jobs) > limit {
		jobs, p.Older = jobs[:limit], true
	}
	p.Jobs = jobs
	if len(jobs) > 0 {
		p.Newer, err = tx.anyJob(ctx, f, true, jobs[0].ID)
	}
	return p, err
}

// JobsAfter returns at most limit jobs that f selects with ids above
// after: the page before a JobsBefore page. They are newest first too.
func (tx *Tx) JobsAfter(ctx context.Context, f JobFilter, after int64, limit int) (JobPage, error) {
	var p JobPage
	jobs, err := tx.scanJobs(ctx, `SELECT `+jobColumns+` FROM jobs
		WHERE `+jobFilterWhere+` AND id > ?4 ORDER BY id LIMIT ?5`,
		f.Status, f.Path, likePattern(f.Path), after, limit+1)
	if err != nil {
		return p, err
	}
	if len(jobs) > limit {
		jobs, p.Newer = jobs[:limit], true
	}
	for i, j := 0, len(jobs)-1; i < j; i, j = i+1, j-1 {
		jobs[i], jobs[j] = jobs[j], jobs[i]
	}
	p.Jobs = jobs
	if len(jobs) > 0 {
		p.Older, err = tx.anyJob(ctx, f, false, jobs[len(jobs)-1].ID)
	}
	return p, err
}

// anyJob says whether a job that f selects has an id above id (newer) or
// below it.
func (tx *Tx) anyJob(ctx context.Context, f JobFilter, newer bool, id int64) (bool, error) {
	query := `SELECT 1 FROM jobs WHERE ` + jobFilterWhere + ` AND id < ?4 LIMIT 1`
	if newer {
		query = `SELECT 1 FROM jobs WHERE ` + jobFilterWhere + ` AND id > ?4 LIMIT 1`
	}
	var one int
	err := tx.queryRow(ctx, query, f.Status, f.Path, likePattern(f.Path), id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("list jobs: %w", err)
	}
	return true, nil
}

// RecentJobs returns the newest jobs of the lorry at path, at most limit,
// newest first.
func (tx *Tx) RecentJobs(ctx context.Context, path string, limit int) ([]Job, error) {
	return tx.scanJobs(ctx, `SELECT `+jobColumns+` FROM jobs WHERE path = ? ORDER BY id DESC LIMIT ?`, path, limit)
}

// RunningJobs returns the running jobs, oldest first.
func (tx *Tx) RunningJobs(ctx context.Context) ([]Job, error) {
	return tx.scanJobs(ctx, `SELECT `+jobColumns+` FROM jobs WHERE `+liveStatus+` ORDER BY id`)
}

func (tx *Tx) scanJobs(ctx context.Context, query string, args ...any) ([]Job, error) {
	rows, err := tx.query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	defer rows.Close()
	out := []Job{}
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, fmt.Errorf("list jobs: %w", err)
		}
		out = append(out, j)
	}
	return out, rows.Err()
}
