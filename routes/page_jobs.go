package routes

import (
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"lorrycontroller.dev/lc/control"
	"lorrycontroller.dev/lc/statedb"
)

// jobsPage is how many jobs a page of the job list shows.
const jobsPage = 50

type jobsView struct {
	pageBase
	Filter   statedb.JobFilter
	Filtered bool
	Statuses []option
	Table    jobTable
	Pager    pager
}

func (s *Server) listJobsHTML(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	f := statedb.JobFilter{Status: q.Get("status"), Path: strings.TrimSpace(q.Get("path"))}
	if f.Status != "" && !slices.Contains(jobStatuses, f.Status) {
		return errorf(http.StatusBadRequest, "no job status %q", f.Status)
	}
	cursor := func(name string) (int64, error) {
		if q.Get(name) == "" {
			return 0, nil
		}
		n, err := strconv.ParseInt(q.Get(name), 10, 64)
		if err != nil || n < 0 {
			return 0, errorf(http.StatusBadRequest, "%s %q is not a job id", name, q.Get(name))
		}
		return n, nil
	}
	before, err := cursor("before")
	if err != nil {
		return err
	}
	after, err := cursor("after")
	if err != nil {
		return err
	}
	var v jobsView
	req := control.JobsRequest{Filter: f, Before: math.MaxInt64, N: jobsPage}
	switch {
	case q.Get("after") != "":
		req.After, req.UseAfter = after, true
	case q.Get("before") != "":
		req.Before = before
	}
	p, err := s.Jobs(r.Context(), req)
	if err != nil {
		return err
	}
	v.Now = p.Now
	v.pageBase = livePage(w, r, "Jobs", "jobs", v.Now)
	v.Filter, v.Filtered = f, f != (statedb.JobFilter{})
	v.Statuses = options(f.Status, "", "All", statedb.StatusClaimed, "Claimed", statedb.StatusRunning, "Running", statedb.StatusSucceeded, "Succeeded",
		statedb.StatusFailed, "Failed", statedb.StatusKilled, "Killed", statedb.StatusTimedOut, "Timed out",
		statedb.StatusLost, "Lost", statedb.StatusOrphaned, "Orphaned")
	v.Table.Now = v.Now
	for _, j := range p.Jobs {
		v.Table.Jobs = append(v.Table.Jobs, jobRow(j, v.Now))
	}
	link := func(name string, id int64) string {
		lq := url.Values{}
		if f.Status != "" {
			lq.Set("status", f.Status)
		}
		if f.Path != "" {
			lq.Set("path", f.Path)
		}
		if name != "" {
			lq.Set(name, strconv.FormatInt(id, 10))
		}
		return "/1.0/list-jobs-html?" + lq.Encode()
	}
	v.Pager = pager{FirstLabel: "Newest", PrevLabel: "Newer", NextLabel: "Older"}
	if n := len(p.Jobs); n > 0 {
		if p.Newer {
			v.Pager.First, v.Pager.Prev = link("", 0), link("after", p.Jobs[0].ID)
		}
		if p.Older {
			v.Pager.Next = link("before", p.Jobs[n-1].ID)
		}
		v.Pager.Where = fmt.Sprintf("Jobs %d to %d", p.Jobs[0].ID, p.Jobs[n-1].ID)
	}
	return writePage(w, http.StatusOK, "jobs.html", v)
}
