package statedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"lorrycontroller.dev/lc/rules"
	"lorrycontroller.dev/lc/wire"
)

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
	// StdoutSpool and StderrSpool, when set, are the stream's output of
	// the update, too big to hold in memory, in place of Stdout or
	// Stderr.
	StdoutSpool, StderrSpool OutputSource
	// StdoutOffset and StderrOffset, when set, are where the update's
	// output starts in each stream: how many bytes the job printed to it
	// before, delivered or cut. A report sent again, its answer lost,
	// adds only what the WEBAPP does not have yet; nil, as from a minion
	// that sends no offsets, appends all of it.
	StdoutOffset, StderrOffset *int64
	DiskUsage                  *int64
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
	// Stopping says that the minion killed the job because it was itself
	// stopping (systemctl stop or restart, an upgrade): the job ends as
	// killed, as when an operator stops it, not as a failure of its lorry.
	Stopping bool
}

// UpdateJob records a minion's report: it appends output, keeps the job
// alive, and finishes it when Exit is set. It answers whether the minion
// should kill the job, which is also how a lorry-timeout is delivered.
// ErrNotFound: no such job; ErrConflict: the job is over or belongs to
// another minion. It also answers whether the minion named is retired.
func (tx *Tx) UpdateJob(ctx context.Context, u JobUpdate) (UpdateReply, error) {
	var j Job
	var retire bool
	var l *Lorry
	var err error
	if u.Exit != nil {
		// A job's end writes on its lorry: it is read with the job.
		j, retire, l, err = tx.jobRetireAndLorry(ctx, u.ID, u.Minion.Name)
	} else {
		j, retire, err = tx.jobAndRetire(ctx, u.ID, u.Minion.Name)
	}
	if err != nil {
		return UpdateReply{}, err
	}
	if !j.Live() && endReported(j, u) {
		// The final report again, its answer lost: it is answered as
		// it was, and the job ends once.
		return UpdateReply{Retire: retire, Repeated: true}, nil
	}
	kill, err := tx.updateJob(ctx, u, j, l)
	return UpdateReply{Kill: kill, Retire: retire}, err
}

// UpdateReply is what a minion's report is answered: whether to kill the
// job, and whether the minion named in the report is retired. Repeated
// is set for a final report sent again, which changed nothing.
type UpdateReply struct {
	Kill, Retire, Repeated bool
}

// jobAndRetire reads job id and whether the minion named is retired, in
// one statement.
func (tx *Tx) jobAndRetire(ctx context.Context, id int64, minion string) (Job, bool, error) {
	var retire int
	row := tx.queryRow(ctx, jobAndRetireQuery, minion, id)
	j, err := scanJob(scanAlso{row, []any{&retire}})
	if errors.Is(err, sql.ErrNoRows) {
		return j, false, fmt.Errorf("no job %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return j, false, fmt.Errorf("read job %d: %w", id, err)
	}
	return j, retire != retireNo, nil
}

const jobAndRetireQuery = `SELECT ` + jobColumns + `, COALESCE((SELECT retire FROM minions WHERE name = $1), 0)
	FROM jobs WHERE id = $2`

// jobRetireAndLorry is jobAndRetire with the job's lorry if it runs the
// job, else nil, in one statement when it does.
func (tx *Tx) jobRetireAndLorry(ctx context.Context, id int64, minion string) (Job, bool, *Lorry, error) {
	var retire int
	var l Lorry
	row := tx.queryRow(ctx, jobRetireLorryQuery, minion, id)
	j, err := scanJob(scanFunc(func(jobDest ...any) error {
		var err error
		l, err = scanLorry(scanFunc(func(lorryDest ...any) error {
			return row.Scan(append(append(jobDest, &retire), lorryDest...)...)
		}))
		return err
	}))
	if errors.Is(err, sql.ErrNoRows) {
		j, retired, err := tx.jobAndRetire(ctx, id, minion)
		return j, retired, nil, err
	}
	if err != nil {
		return j, false, nil, fmt.Errorf("read job %d: %w", id, err)
	}
	return j, retire != retireNo, &l, nil
}

var jobRetireLorryQuery = `SELECT ` + qualified("jobs", jobColumns) + `,
		COALESCE((SELECT retire FROM minions WHERE name = $1), 0), ` + qualified("lorries", lorryColumns) + `
	FROM jobs JOIN lorries ON lorries.path = jobs.path AND lorries.running_job = jobs.id WHERE jobs.id = $2`

// qualified is the list of columns with each named as table's.
func qualified(table, columns string) string {
	names := strings.Split(columns, ",")
	for i, n := range names {
		names[i] = table + "." + strings.TrimSpace(n)
	}
	return strings.Join(names, ", ")
}

// scanFunc is a scanner made of a function.
type scanFunc func(dest ...any) error

func (f scanFunc) Scan(dest ...any) error { return f(dest...) }

// scanAlso scans the columns its caller asks for and then those of also.
type scanAlso struct {
	row  scanner
	also []any
}

func (s scanAlso) Scan(dest ...any) error { return s.row.Scan(append(dest, s.also...)...) }

func (tx *Tx) updateJob(ctx context.Context, u JobUpdate, j Job, l *Lorry) (kill bool, err error) {
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
	stdout, stderr := u.streams()
	cut := u.CutBytes
	if u.StdoutOffset != nil {
		// What the WEBAPP has of each stream is left out; what is new
		// past it must start where the WEBAPP's ends, but for the
		// bytes the minion says it cut.
		gap := &OutputGapError{Job: j.ID, StdoutBytes: j.stdoutBytes, StderrBytes: j.stderrBytes}
		var outCut, errCut int64
		stdout, outCut = resume(stdout, *u.StdoutOffset, &j.stdoutBytes)
		stderr, errCut = resume(stderr, *u.StderrOffset, &j.stderrBytes)
		if outCut+errCut > u.CutBytes {
			return false, gap
		}
		cut = outCut + errCut
	}
	if err := tx.skipOutput(ctx, &j, cut); err != nil {
		return false, err
	}
	for _, src := range []OutputSource{stdout, stderr} {
		if err := tx.appendFolded(ctx, &j, src); err != nil {
			return false, err
		}
	}
	if u.DiskUsage != nil {
		j.DiskUsage = u.DiskUsage
	}
	if u.RuntimeBuilt != nil || u.RuntimeBuildSeconds != nil {
		_, err := tx.exec(ctx, `UPDATE jobs SET runtime_built = COALESCE($1, runtime_built),
			runtime_build_seconds = COALESCE($2, runtime_build_seconds) WHERE id = $3`,
			u.RuntimeBuilt, u.RuntimeBuildSeconds, j.ID)
		if err != nil {
			return false, fmt.Errorf("update job %d: %w", j.ID, err)
		}
	}

	if u.Exit != nil {
		return false, tx.finishReported(ctx, j, u, l)
	}

	if !j.Kill && j.Timeout > 0 && tx.Now-j.Started > j.Timeout {
		j.Kill, j.KillReason = true, StatusTimedOut
	}
	return j.Kill, tx.drv.saveProgress(ctx, tx, j)
}

// streams are the update's stdout and stderr, from memory or spooled.
func (u JobUpdate) streams() (stdout, stderr OutputSource) {
	stdout, stderr = bytesSource(u.Stdout), bytesSource(u.Stderr)
	if u.StdoutSpool != nil {
		stdout = u.StdoutSpool
	}
	if u.StderrSpool != nil {
		stderr = u.StderrSpool
	}
	return stdout, stderr
}

// SentSource is output stored otherwise than the minion sent it, with
// credentials hidden: Sent is how many bytes the minion sent, and
// Stored how many of the stored bytes the first n sent became. Offsets
// count the bytes sent.
type SentSource interface {
	OutputSource
	Sent() int64
	Stored(n int64) int64
}

// sentLen is how many bytes of out the minion sent.
func sentLen(out OutputSource) int64 {
	if s, ok := out.(SentSource); ok {
		return s.Sent()
	}
	return out.Len()
}

// resume is what is new in out, which starts at offset in a stream of
// which the WEBAPP has *have bytes: out without the bytes the WEBAPP has,
// and how many bytes before it the WEBAPP does not have, which only a
// cut of the minion's may account for. *have becomes the end of out.
func resume(out OutputSource, offset int64, have *int64) (OutputSource, int64) {
	n := sentLen(out)
	skip := *have - offset
	*have = max(*have, offset+n)
	switch {
	case skip <= 0:
		return out, -skip
	case skip >= n:
		return bytesSource(nil), 0
	}
	if s, ok := out.(SentSource); ok {
		skip = s.Stored(skip)
	}
	if b, ok := out.(bytesSource); ok {
		return b[skip:], 0
	}
	return skipSource{out, skip}, 0
}

// endReported says whether u is the final report that ended j, sent
// again: from j's minion, with j's exit, and with no output the WEBAPP
// does not have. Only a report that carries its offsets can say so.
func endReported(j Job, u JobUpdate) bool {
	if u.Exit == nil || j.Exit == nil || *u.Exit != *j.Exit || u.StdoutOffset == nil || u.StderrOffset == nil {
		return false
	}
	if u.Minion.Name != j.Minion || u.Minion.PID != 0 && u.Minion.PID != j.PID {
		return false
	}
	stdout, stderr := u.streams()
	return *u.StdoutOffset+sentLen(stdout) <= j.stdoutBytes && *u.StderrOffset+sentLen(stderr) <= j.stderrBytes
}

// OutputGapError refuses a report whose output starts past what the
// WEBAPP has of the job's output, leaving out bytes that nobody said
// were cut: the minion is to send again from StdoutBytes and
// StderrBytes, what the WEBAPP has of each stream.
type OutputGapError struct {
	Job                      int64
	StdoutBytes, StderrBytes int64
}

func (e *OutputGapError) Error() string {
	return fmt.Sprintf("job %d: the report's output starts past what the WEBAPP has: stdout at %d bytes, stderr at %d",
		e.Job, e.StdoutBytes, e.StderrBytes)
}

// finishReported ends job j, whose minion reported its end in u: it
// keeps what a successful end reports (the upstream's HEAD and the refs
// it changed) and records the end. l is j's lorry as read, if it runs j.
func (tx *Tx) finishReported(ctx context.Context, j Job, u JobUpdate, l *Lorry) error {
	status := StatusFailed
	switch {
	case *u.Exit == 0:
		status = StatusSucceeded
	case j.KillReason == StatusTimedOut:
		status = StatusTimedOut
	case j.KillReason == StatusKilled, u.Stopping:
		status = StatusKilled
	}
	if status == StatusSucceeded && u.Refs != nil {
		if err := tx.setJobRefs(ctx, j.ID, u.Refs); err != nil {
			return err
		}
		if u.Refs.Any() {
			if err := tx.Notify(ctx, EventRefsChanged, RefsChanged{Lorry: j.Path, JobID: j.ID, Refs: u.Refs}); err != nil {
				return err
			}
		}
	}
	class := rules.EndClass(j.Kind, status, u.ErrorClass)
	return tx.endJob(ctx, j, jobEnd{status: status, exit: u.Exit, class: class, heard: true, head: u.Head, lorry: l})
}

// progressArgs are the arguments of the statements that save the
// progress of the live job j at now (driver.saveProgress): its output's
// counters, disk usage and kill. The output appended is counted from the
// row as j was read, so the row must still be live and unchanged since
// (its updated time), else ErrTaken. (A report does not hold its job
// first, as endReadJob does, to spare the job protocol a write: output
// appended meanwhile is found by its chunks' places.)
func (j Job) progressArgs(now int64) []any {
	return []any{now, j.Kill, j.KillReason, j.DiskUsage, j.OutputBytes, j.headBytes, j.tailBytes, j.CutBytes,
		j.nextChunk, carryValue(j.carry), j.ID, j.Updated, j.stdoutBytes, j.stderrBytes}
}
