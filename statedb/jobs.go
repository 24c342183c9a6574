package statedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"lorrycontroller.dev/lc/rules"
)

// Job states: see rules.
const (
	StatusClaimed   = rules.StatusClaimed
	StatusRunning   = rules.StatusRunning
	StatusSucceeded = rules.StatusSucceeded
	StatusFailed    = rules.StatusFailed
	StatusKilled    = rules.StatusKilled
	StatusTimedOut  = rules.StatusTimedOut
	StatusLost      = rules.StatusLost
	StatusOrphaned  = rules.StatusOrphaned
)

// liveStatus is the SQL condition of a live job: claimed or running.
const liveStatus = `status IN ('claimed', 'running')`

// Live says whether the job is claimed or running: not over yet.
func (j Job) Live() bool { return rules.Live(j.Status) }

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
	// stdoutBytes and stderrBytes are how much of each output stream
	// the WEBAPP has, stored or cut by the minion: the end of what the
	// reports that carried offsets covered (JobUpdate.StdoutOffset).
	stdoutBytes, stderrBytes int64
	// carry is the end of the output held back from job_output while a
	// carriage return may still rewrite it (see foldCR).
	carry []byte
}

const jobColumns = `id, path, kind, minion, host, pid, started, updated, ended, status,
	exit, kill, kill_reason, timeout, disk_usage, output_bytes, cut_bytes,
	head_bytes, tail_bytes, next_chunk, text, commit_id, runtime_name, runtime_version,
	runtime_id, runtime_python, runtime_built, runtime_build_seconds, error_class, lorry_state,
	output_carry, stdout_bytes, stderr_bytes`

func scanJob(row scanner) (Job, error) {
	var j Job
	var ended, exit, du sql.NullInt64
	var built sql.NullBool
	var buildSecs sql.NullFloat64
	err := row.Scan(&j.ID, &j.Path, &j.Kind, &j.Minion, &j.Host, &j.PID, &j.Started,
		&j.Updated, &ended, &j.Status, &exit, &j.Kill, &j.KillReason, &j.Timeout, &du,
		&j.OutputBytes, &j.CutBytes, &j.headBytes, &j.tailBytes, &j.nextChunk,
		&j.Text, &j.CommitID, &j.Runtime.Name, &j.Runtime.Version, &j.Runtime.ID, &j.Runtime.Python,
		&built, &buildSecs, &j.ErrorClass, &j.LorryState, &j.carry, &j.stdoutBytes, &j.stderrBytes)
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
	j, err := scanJob(tx.queryRow(ctx, `SELECT `+jobColumns+` FROM jobs WHERE id = $1`, id))
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
	return tx.jobIDs(ctx, `SELECT id FROM jobs WHERE path = $1 ORDER BY id DESC LIMIT $2`, path, limit)
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
