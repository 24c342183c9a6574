package routes

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"lorrycontroller.dev/lc/statedb"
	"lorrycontroller.dev/lc/templates"
	"lorrycontroller.dev/lc/wire"
)

type jobPageView struct {
	pageBase
	Job    jobView
	Output string
	Next   int64
	// Progress is the line a progress meter still rewrites, shown apart
	// from the output until it ends.
	Progress        string
	OutputSize      string
	BackAfterRemove string
	// Refs are the refs the job changed; nil when unknown.
	Refs *refsView
}

// refsView is a job's ref changes as its page lists them.
type refsView struct {
	Rows      []refRowView
	Truncated bool
}

type refRowView struct {
	Change       string // created, updated or deleted
	Ref          string
	Old, New     string // object ids, shortened
	OldID, NewID string
}

func refsRows(c *wire.RefChanges) *refsView {
	if c == nil {
		return nil
	}
	short := func(id string) string { return id[:min(len(id), 10)] }
	v := &refsView{Truncated: c.Truncated}
	for _, kind := range []struct {
		change string
		refs   []wire.RefChange
	}{{"created", c.Created}, {"updated", c.Updated}, {"deleted", c.Deleted}} {
		for _, r := range kind.refs {
			v.Rows = append(v.Rows, refRowView{Change: kind.change, Ref: r.Ref,
				Old: short(r.Old), New: short(r.New), OldID: r.Old, NewID: r.New})
		}
	}
	return v
}

// outputSize says how much output a job printed and how much of it was
// cut to keep under the cap.
func outputSize(j statedb.Job) string {
	s := templates.Size(j.OutputBytes)
	if j.CutBytes > 0 {
		s += fmt.Sprintf(", of which %s cut from the middle", templates.Size(j.CutBytes))
	}
	return s
}

func (s *Server) jobHTML(w http.ResponseWriter, r *http.Request) error {
	id, err := parseJobID(chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	part, err := s.JobOutput(r.Context(), id, 0, true)
	if err != nil {
		return err
	}
	now, refs := part.Now, part.Refs
	v := jobPageView{pageBase: livePage(w, r, fmt.Sprintf("Job %d", id), "jobs", now),
		Job: jobRow(part.Job, now), Output: part.Text, Next: part.Next, Progress: part.Progress, OutputSize: outputSize(part.Job),
		BackAfterRemove: "/1.0/list-jobs-html", Refs: refsRows(refs)}
	if part.Job.Live() {
		v.Refresh = 5
	}
	return writePage(w, http.StatusOK, "job.html", v)
}

// jobOutputJSON is the answer to job-output: what a running job's page
// needs to update itself.
type jobOutputJSON struct {
	JobID         int64  `json:"job_id"`
	Status        string `json:"status"`
	StatusText    string `json:"status_text"`
	StatusClass   string `json:"status_class"`
	Exit          *int64 `json:"exit"`
	ExitText      string `json:"exit_text"`
	Kill          bool   `json:"kill"`
	Started       int64  `json:"started"`
	Ended         *int64 `json:"ended"`
	Updated       int64  `json:"updated"`
	DiskUsage     *int64 `json:"disk_usage"`
	DiskUsageText string `json:"disk_usage_text"`
	OutputBytes   int64  `json:"output_bytes"`
	OutputSize    string `json:"output_size"`
	Output        string `json:"output"`
	Next          int64  `json:"next"`
	// Progress is the line a progress meter still rewrites, as it
	// stands; output leaves it out until it ends.
	Progress string `json:"progress"`
}

func (s *Server) jobOutput(w http.ResponseWriter, r *http.Request) error {
	id, err := parseJobID(chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	var offset int64
	if o := r.URL.Query().Get("offset"); o != "" {
		if offset, err = strconv.ParseInt(o, 10, 64); err != nil || offset < 0 {
			return errorf(http.StatusBadRequest, "offset %q is not a byte offset", o)
		}
	}
	part, err := s.JobOutput(r.Context(), id, offset, false)
	if err != nil {
		return err
	}
	now := part.Now
	v := jobRow(part.Job, now)
	w.Header().Set("Cache-Control", "no-store")
	return ok(w, jobOutputJSON{
		JobID: v.JobID, Status: v.Status, StatusText: v.State, StatusClass: v.Class, Exit: v.Exit,
		ExitText: v.ExitText, Kill: v.Kill, Started: v.Started, Ended: v.Ended, Updated: v.Updated,
		DiskUsage: v.DiskUsage, DiskUsageText: templates.Size(v.DiskUsage), OutputBytes: v.OutputBytes,
		OutputSize: outputSize(part.Job), Output: part.Text, Next: part.Next, Progress: part.Progress,
	})
}
