package statedb

import (
	"context"
	"errors"
	"fmt"

	"lorrycontroller.dev/lc/rules"
)

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
	// Retired says that the minion is retired, and is to exit: there is
	// no job for it (Idle says so too).
	Retired bool
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
func (m MinionID) onlyKind() string { return rules.OnlyKind(m.Kinds) }

// GiveMeJob hands the first due lorry of the queue to the minion m, within
// max_jobs, the limits of the queues and of m's host and the queues m
// takes (see pickLorry), or
// says in Idle why there is nothing to do. Either way the minion is
// recorded as seen. A retired minion gets nothing, and is told so
// (Retired). A minion that asks again
// while it owns a running job gets that job again; a minion that comes back
// with a new pid has its old job ended as lost, since the minion killed what
// was left of the job before asking.
func (tx *Tx) GiveMeJob(ctx context.Context, m MinionID) (Assignment, error) {
	a, touched, err := tx.giveMeJob(ctx, m)
	if err != nil || touched {
		return a, err
	}
	if a.Retired {
		return a, tx.TouchRetiredMinion(ctx, m)
	}
	// The minion's row is written once, with the job it has now.
	var job *int64
	if a.Idle == "" {
		job = &a.Job.ID
	}
	return a, tx.touchMinion(ctx, m, job)
}

// giveMeJob is GiveMeJob but for recording the minion, which a driver's
// claim may do in its own statement (claimDue): touched says so.
func (tx *Tx) giveMeJob(ctx context.Context, m MinionID) (a Assignment, touched bool, err error) {
	st, err := tx.handOutState(ctx, m)
	if err != nil {
		return a, false, err
	}
	for {
		if st.minionKnown && st.owns {
			if err := tx.drv.holdReports(ctx, tx); err != nil {
				return a, false, err
			}
		}
		if st.minionKnown && st.retired {
			return Assignment{Retired: true, Idle: "the minion is retired"}, false, nil
		}
		if st.minionKnown && st.owns {
			again, ok, ended, err := tx.endOwnedJobs(ctx, m)
			if err != nil || ok {
				return again, false, err
			}
			if ended {
				// A job ended as lost leaves its lorry due again.
				tx.handOut = nil
				known := st.minionKnown
				if st, err = tx.handOutState(ctx, m); err != nil {
					return a, false, err
				}
				st.minionKnown = known
			}
			st.owns = false
		}
		a, touched, err = tx.handOutTo(ctx, m, st)
		if err != nil || st.minionKnown || a.Idle == "" {
			return a, touched, err
		}
		// A hand-out's state that left out the minion's own (the
		// claim's guard instead) has it read when there is nothing to
		// claim for it, or the claim found it retired or with a live
		// job.
		if st.retired, st.owns, err = tx.minionState(ctx, m); err != nil {
			return a, false, err
		}
		st.minionKnown = true
		if !st.retired && !st.owns && a.Idle != idleNotFree {
			return a, false, nil
		}
	}
}

// idleNoneDue is why a minion is given nothing when no entry is due.
const idleNoneDue = "no lorry is due"

// idleNotFree is why a claim whose guard is the minion's state made no
// job: the minion is retired or has a live job, which its own state,
// read next, tells.
const idleNotFree = "the minion is retired or has a live job"

// handOutTo hands minion m, of state st, the first due lorry within the
// limits, or says in Idle why there is none.
func (tx *Tx) handOutTo(ctx context.Context, m MinionID, st handOutState) (a Assignment, touched bool, err error) {
	if !st.running {
		return Assignment{Idle: "the queue is stopped"}, false, nil
	}
	// The live jobs are counted before the due probe's answer is looked
	// at when max_jobs needs them, after it otherwise, so that an idle
	// poll never counts.
	var live *liveCounts
	count := func() error {
		if st.live != nil {
			live = st.live
			return nil
		}
		c, err := tx.runningByQueueAndHost(ctx, m.Host)
		live = &c
		return err
	}
	if st.max != nil {
		if err := count(); err != nil {
			return a, false, err
		}
		if live.all >= *st.max {
			return Assignment{Idle: fmt.Sprintf("%d jobs running, max_jobs is %d", live.all, *st.max)}, false, nil
		}
	}
	// Only when something is due is the queue walked in order to find
	// the first one.
	if !st.anyDue {
		return Assignment{Idle: idleNoneDue}, false, nil
	}
	if live == nil {
		if err := count(); err != nil {
			return a, false, err
		}
	}
	q, idle, err := tx.openQueues(ctx, m, *live, st)
	if err == nil && idle != "" {
		idle, err = tx.drv.idleAfterClaims(ctx, tx, idle)
	}
	if err != nil || idle != "" {
		return Assignment{Idle: idle}, false, err
	}
	return tx.drv.claimDue(ctx, tx, m, q)
}

// endOwnedJobs deals with the live jobs that minion m owns as it asks for
// work: the job it asks for again (returned, with ok), and those of an earlier
// process of m, which are lost (ended says that there were some).
func (tx *Tx) endOwnedJobs(ctx context.Context, m MinionID) (again Assignment, ok, ended bool, err error) {
	rows, err := tx.query(ctx, `SELECT `+jobColumns+` FROM jobs WHERE minion = $1 AND `+liveStatus, m.Name)
	if err != nil {
		return Assignment{}, false, false, fmt.Errorf("find jobs of minion %s: %w", m.Name, err)
	}
	var owned []Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			rows.Close()
			return Assignment{}, false, false, err
		}
		owned = append(owned, j)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return Assignment{}, false, false, err
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
				return Assignment{Job: j, Lorry: l, Again: true}, true, false, nil
			}
			if !errors.Is(err, ErrNotFound) {
				return Assignment{}, false, false, err
			}
			// The minion never saw the job, and its spec is gone with the
			// lorry: the job never ran and never will.
			msg = fmt.Sprintf("the lorry was removed before minion %s started the job", m.Name)
		}
		if err := tx.endReadJob(ctx, j, jobEnd{status: StatusLost, why: msg}); err != nil {
			return Assignment{}, false, false, err
		}
		ended = true
	}
	return Assignment{}, false, ended, nil
}

// claimLorry hands l out to minion m: it creates the job and marks l
// running.
func (tx *Tx) claimLorry(ctx context.Context, m MinionID, l Lorry) (Assignment, error) {
	var id int64
	err := tx.queryRow(ctx, insertClaimedJob, l.Path, l.Kind, m.Name, m.Host, m.PID, tx.Now, tx.Now, l.Timeout,
		jobText(l), l.CommitID, l.Runtime.Name, l.Runtime.Version, l.Runtime.ID, l.Runtime.Python, l.Queue).Scan(&id)
	if err != nil {
		return Assignment{}, fmt.Errorf("create job for %q: %w", l.Path, err)
	}
	if err := tx.markRunning(ctx, l.Path, id); err != nil {
		return Assignment{}, err
	}
	return claimed(m, l, id, tx.Now), nil
}

// claimed is the assignment of lorry l to minion m as job id, made at
// now.
func claimed(m MinionID, l Lorry, id, now int64) Assignment {
	l.RunningJob = &id
	j := Job{ID: id, Path: l.Path, Kind: l.Kind, Minion: m.Name, Host: m.Host, PID: m.PID,
		Started: now, Updated: now, Status: StatusClaimed, Timeout: l.Timeout,
		Text: jobText(l), CommitID: l.CommitID, Runtime: l.Runtime}
	return Assignment{Job: j, Lorry: l}
}

// jobText is the spec a job of l keeps: a scraper's job keeps its spec,
// commit and runtime, so that it is handed them again if the minion asks
// again after CONFGIT moved on. (claimFirst says the same in SQL.)
func jobText(l Lorry) string {
	if l.CommitID != "" {
		return l.Text
	}
	return ""
}

// insertClaimedJob makes the job of a claim, given its path, kind,
// minion, host, pid, start, timeout, spec, commit, runtime and queue.
const insertClaimedJob = `INSERT INTO jobs (path, kind, minion, host, pid, started, updated, status, timeout,
		text, commit_id, runtime_name, runtime_version, runtime_id, runtime_python, queue)
	VALUES ($1, $2, $3, $4, $5, $6, $7, 'claimed', $8, $9, $10, $11, $12, $13, $14, $15) RETURNING id`

// markRunning gives the lorry at path the live job id, if it has none:
// a lorry has one live job at most, whatever else writes. ErrTaken if it
// has one. Handing a lorry out sends it to the back of the queue, so
// every due lorry gets its turn before any comes round again; its place
// is worked out in the statement that takes it, and the unique index on
// queue_pos keeps two entries from ever sharing one.
func (tx *Tx) markRunning(ctx context.Context, path string, id int64) error {
	res, err := tx.exec(ctx, `UPDATE lorries SET running_job = $1,
			queue_pos = (SELECT MAX(queue_pos) + 1 FROM lorries)
		WHERE path = $2 AND running_job IS NULL`, id, path)
	if err != nil {
		return fmt.Errorf("mark %q running: %w", path, err)
	}
	return taken(res, fmt.Sprintf("mark %q running with job %d: it has a live job", path, id))
}
