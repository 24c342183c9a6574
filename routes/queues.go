package routes

import (
	"encoding/json"
	"fmt"
	"net/http"

	"lorrycontroller.dev/lc/statedb"
)

// queueJSON is a queue as status shows it.
type queueJSON struct {
	Name string `json:"name"`
	// Threads is the limit in force now, null for none.
	Threads *int64 `json:"threads"`
	// ThreadsBySchedule is the threads-schedule, with the entry in force
	// now marked; empty when the queue has none, and then the section's
	// threads always apply.
	ThreadsBySchedule []threadsEntryJSON `json:"threads_by_schedule"`
	Sort              string             `json:"sort"`
	Running           int64              `json:"running"`
	Due               int64              `json:"due"`
	// OldestDueWait is how long the entry due longest has waited, in
	// seconds; null when none is due.
	OldestDueWait *int64 `json:"oldest_due_wait"`
}

type threadsEntryJSON struct {
	Schedule string `json:"schedule"` // the schedule in words
	Threads  *int64 `json:"threads"`
	Active   bool   `json:"active"`
}

func queueWire(q statedb.QueueState, now int64) queueJSON {
	out := queueJSON{Name: q.Name, Threads: q.Now, Sort: q.Sort, Running: q.Running, Due: q.Due,
		ThreadsBySchedule: make([]threadsEntryJSON, len(q.Entries))}
	for i, e := range q.Entries {
		out.ThreadsBySchedule[i] = threadsEntryJSON{Schedule: e.Item.Describe(), Threads: e.Threads, Active: i == q.Active}
	}
	if q.OldestDue != nil {
		wait := now - *q.OldestDue
		out.OldestDueWait = &wait
	}
	return out
}

func (s *Server) getHostMaxJobs(w http.ResponseWriter, r *http.Request) error {
	host := r.URL.Query().Get("host")
	if host == "" {
		return errorf(http.StatusBadRequest, "get-host-max-jobs needs host")
	}
	n, err := s.HostMaxJobs(r.Context(), host)
	if err != nil {
		return err
	}
	return ok(w, hostMaxJobsJSON{Host: host, MaxJobs: n})
}

type hostMaxJobsJSON struct {
	Host    string `json:"host"`
	MaxJobs *int64 `json:"max_jobs"`
}

func (s *Server) setHostMaxJobs(w http.ResponseWriter, r *http.Request) error {
	p, err := s.readParams(r)
	if err != nil {
		return err
	}
	host, err := p.required("host")
	if err != nil {
		return err
	}
	n, err := p.optionalInt("max_jobs")
	if err != nil {
		return err
	}
	if err := s.SetHostMaxJobs(r.Context(), host, n); err != nil {
		return err
	}
	return ok(w, hostMaxJobsJSON{Host: host, MaxJobs: n})
}

func saidHostMaxJobs(_ *http.Request, body []byte) string {
	var res hostMaxJobsJSON
	json.Unmarshal(body, &res)
	if res.MaxJobs == nil {
		return fmt.Sprintf("Host %s has no max jobs now.", res.Host)
	}
	return fmt.Sprintf("Max jobs of host %s set to %d.", res.Host, *res.MaxJobs)
}

// queueStates are the queues as status shows them.
func queueStates(qs []statedb.QueueState, now int64) []queueJSON {
	out := make([]queueJSON, len(qs))
	for i, q := range qs {
		out[i] = queueWire(q, now)
	}
	return out
}
