package control

import (
	"context"

	"lorrycontroller.dev/lc/statedb"
)

// StatusRead is what the status answer and the status page show, read in
// one transaction so that it all shows one moment.
type StatusRead struct {
	Now          int64
	Applying     *ConfigProgress
	RunningQueue bool
	MaxJobs      *int64
	Queues       []statedb.QueueState
	HostMaxJobs  map[string]int64
	Lorries      statedb.LorryCounts
	Hosts        []statedb.Host
	RunningJobs  []int64
	Minions      []statedb.Minion
	Config       statedb.ConfigState
	Replicas     []statedb.Replica

	// Queue is the first lorries of the run queue, as StatusRequest.Queue
	// asks.
	Queue []statedb.Lorry
	// Page is what the status page shows besides, if asked for.
	Page *StatusPage
}

// StatusPage is what the status page shows besides StatusRead's.
type StatusPage struct {
	Hours   []statedb.HourCount
	Waits   map[string][]statedb.WaitPoint
	Running []RunningJob
	Failing []statedb.Lorry
	// Queues are the pages of the run queue StatusPageRequest.Queues
	// asks for, in its order.
	Queues []QueuePage
}

// RunningJob is a live job with the last line of its output.
type RunningJob struct {
	Job      statedb.Job
	LastLine string
}

// QueuePage is a page of the run queue filtered: Matches lorries match
// the filter, and Lorries are those of page Page (the last, if fewer), the
// first of them at Offset.
type QueuePage struct {
	Matches      int64
	Page, Offset int
	Lorries      []statedb.Lorry
}

// StatusRequest says what Status reads beyond the state of the
// controller: the first Queue lorries of the run queue, and the page's
// parts if Page is set.
type StatusRequest struct {
	Queue int
	Page  *StatusPageRequest
}

// StatusPageRequest asks for the status page's parts: the jobs per hour
// of the last Hours and the queue waits in slots of WaitSlot seconds over
// them, at most Failing failing lorries, and a page of PerPage lorries of
// the run queue for each of Queues.
type StatusPageRequest struct {
	Hours    int
	WaitSlot int64
	Failing  int
	PerPage  int
	Queues   []QueueRequest
}

// QueueRequest asks for page Page (from 1) of the run queue filtered by
// Filter.
type QueueRequest struct {
	Filter statedb.LorryFilter
	Page   int
}

// Status reads the state of the controller as req asks.
func (a *App) Status(ctx context.Context, req StatusRequest) (StatusRead, error) {
	return read(ctx, a, func(tx *statedb.Tx) (st StatusRead, err error) {
		// Asked before the first read, which the transaction's snapshot
		// starts at: a read that has ended by then is in the snapshot.
		if p, ok := a.ConfigRunning(); ok {
			st.Applying = &p
		}
		st.Now = tx.Now
		if err := readState(ctx, tx, &st); err != nil {
			return st, err
		}
		if req.Queue > 0 {
			if st.Queue, err = tx.LorriesAfter(ctx, minQueuePos, req.Queue); err != nil {
				return st, err
			}
		}
		if req.Page != nil {
			st.Page, err = readStatusPage(ctx, tx, *req.Page, st.Lorries)
		}
		return st, err
	})
}

// minQueuePos is before every place in the run queue.
const minQueuePos = -1 << 63

// readState reads into st the state of the controller.
func readState(ctx context.Context, tx *statedb.Tx, st *StatusRead) (err error) {
	if st.RunningQueue, err = tx.RunningQueue(ctx); err != nil {
		return err
	}
	if st.MaxJobs, err = tx.MaxJobs(ctx); err != nil {
		return err
	}
	if st.Queues, err = tx.QueueStates(ctx); err != nil {
		return err
	}
	if st.HostMaxJobs, err = tx.HostLimits(ctx); err != nil {
		return err
	}
	if st.Lorries, err = tx.CountLorries(ctx); err != nil {
		return err
	}
	if st.Hosts, err = tx.Hosts(ctx); err != nil {
		return err
	}
	if st.RunningJobs, err = tx.RunningJobIDs(ctx); err != nil {
		return err
	}
	if st.Minions, err = tx.Minions(ctx); err != nil {
		return err
	}
	if st.Config, err = tx.ConfigState(ctx); err != nil {
		return err
	}
	st.Replicas, err = tx.Replicas(ctx)
	return err
}

// readStatusPage reads the status page's parts as req asks; counts are
// the lorries counted already.
func readStatusPage(ctx context.Context, tx *statedb.Tx, req StatusPageRequest, counts statedb.LorryCounts) (*StatusPage, error) {
	var p StatusPage
	var err error
	if p.Hours, err = tx.JobsPerHour(ctx, req.Hours); err != nil {
		return nil, err
	}
	if p.Waits, err = tx.QueueWaits(ctx, int64(req.Hours)*3600, req.WaitSlot); err != nil {
		return nil, err
	}
	running, err := tx.RunningJobs(ctx)
	if err != nil {
		return nil, err
	}
	ids := make([]int64, len(running))
	for i, j := range running {
		ids[i] = j.ID
	}
	lines, err := tx.LastOutputLines(ctx, ids)
	if err != nil {
		return nil, err
	}
	for _, j := range running {
		p.Running = append(p.Running, RunningJob{Job: j, LastLine: lines[j.ID]})
	}
	if counts.Failing > 0 {
		if p.Failing, err = tx.FailingLorries(ctx, 0, req.Failing); err != nil {
			return nil, err
		}
	}
	for _, q := range req.Queues {
		page, err := readQueuePage(ctx, tx, q, req.PerPage, counts.Total)
		if err != nil {
			return nil, err
		}
		p.Queues = append(p.Queues, page)
	}
	return &p, nil
}

// readQueuePage reads the page of perPage lorries of the run queue that q
// asks for; total is how many lorries there are.
func readQueuePage(ctx context.Context, tx *statedb.Tx, q QueueRequest, perPage int, total int64) (QueuePage, error) {
	p := QueuePage{Matches: total}
	if q.Filter != (statedb.LorryFilter{}) {
		var err error
		if p.Matches, err = tx.CountLorriesMatching(ctx, q.Filter); err != nil {
			return p, err
		}
	}
	pages := max(1, int((p.Matches+int64(perPage)-1)/int64(perPage)))
	p.Page = min(max(q.Page, 1), pages)
	p.Offset = (p.Page - 1) * perPage
	var err error
	p.Lorries, err = tx.LorryPage(ctx, q.Filter, p.Offset, perPage)
	return p, err
}

// LorriesAfter reads at most n lorries of the run queue after the place
// after.
func (a *App) LorriesAfter(ctx context.Context, after int64, n int) ([]statedb.Lorry, error) {
	return read(ctx, a, func(tx *statedb.Tx) ([]statedb.Lorry, error) { return tx.LorriesAfter(ctx, after, n) })
}

// StateDir is the directory of the state database's disk, whose free
// space the status shows, when that disk is this machine's (a SQLite
// file's); "" for a state database elsewhere.
func (a *App) StateDir() string { return a.DB.DiskDir() }

// Ping says whether the state database answers.
func (a *App) Ping(ctx context.Context) error { return a.DB.Ping(ctx) }

// CheckWrites says whether the state database takes writes.
func (a *App) CheckWrites(ctx context.Context) error { return a.DB.CheckWrites(ctx) }
