package routes

import (
	"strings"

	"lorrycontroller/redact"

	"lorrycontroller/statedb"
)

// lorryJSON is a run-queue entry as the API shows it.
type lorryJSON struct {
	Path         string `json:"path"`
	Text         string `json:"text"`
	Kind         string `json:"kind"`
	FromHost     string `json:"from_host"`
	FromPath     string `json:"from_path"`
	Generated    bool   `json:"generated"`
	RunningJob   *int64 `json:"running_job"`
	LastRun      *int64 `json:"last_run"`
	NextDue      int64  `json:"next_due"`
	Interval     int64  `json:"interval"`
	LorryTimeout int64  `json:"lorry_timeout"`
	DiskUsage    *int64 `json:"disk_usage"`
	LastRunExit  *int64 `json:"last_run_exit"`
	LastRunError string `json:"last_run_error"`
	Description  string `json:"description"`
	// DefaultBranch is the upstream's, for the downstream repository.
	DefaultBranch string `json:"default_branch"`
	// UpstreamHead is the branch the upstream's HEAD named at the last
	// successful job, which the downstream's default branch follows.
	UpstreamHead string `json:"upstream_head"`
}

// lorryWire shows a lorry. Its spec may hold a clone URL with credentials,
// which only the minion is given in full.
func lorryWire(l statedb.Lorry) lorryJSON {
	return lorryJSON{
		Path: l.Path, Text: redact.URLs(l.Text), Kind: l.Kind, FromHost: l.FromHost, FromPath: l.FromPath,
		Generated: l.Generated, RunningJob: l.RunningJob, LastRun: l.LastRun, NextDue: l.NextDue,
		Interval: l.Interval, LorryTimeout: l.Timeout, DiskUsage: l.DiskUsage,
		LastRunExit: l.LastRunExit, LastRunError: redact.URLs(l.LastRunError),
		Description: l.Description, DefaultBranch: l.DefaultBranch, UpstreamHead: l.UpstreamHead,
	}
}

// jobJSON is a job as the API shows it.
type jobJSON struct {
	JobID       int64  `json:"job_id"`
	Path        string `json:"path"`
	Kind        string `json:"kind"`
	Minion      string `json:"minion"`
	Host        string `json:"host"`
	PID         int64  `json:"pid"`
	Started     int64  `json:"started"`
	Ended       *int64 `json:"ended"`
	Updated     int64  `json:"updated"`
	Status      string `json:"status"`
	Exit        *int64 `json:"exit"`
	Kill        bool   `json:"kill"`
	Timeout     int64  `json:"timeout"`
	DiskUsage   *int64 `json:"disk_usage"`
	OutputBytes int64  `json:"output_bytes"`
	CutBytes    int64  `json:"cut_bytes"`
	Output      string `json:"output"`
}

func jobWire(j statedb.Job, output string) jobJSON {
	return jobJSON{
		JobID: j.ID, Path: j.Path, Kind: j.Kind, Minion: j.Minion, Host: j.Host, PID: j.PID,
		Started: j.Started, Ended: j.Ended, Updated: j.Updated, Status: j.Status, Exit: j.Exit,
		Kill: j.Kill, Timeout: j.Timeout, DiskUsage: j.DiskUsage, OutputBytes: j.OutputBytes,
		CutBytes: j.CutBytes, Output: strings.ToValidUTF8(output, "\uFFFD"),
	}
}

// hostJSON is an Upstream Host as the API shows it: never its section,
// which may hold credentials.
type hostJSON struct {
	Host        string `json:"host"`
	Type        string `json:"type"`
	Protocol    string `json:"protocol"`
	LsInterval  int64  `json:"ls_interval"`
	Interval    int64  `json:"interval"`
	Timeout     int64  `json:"lorry_timeout"`
	LastLs      *int64 `json:"last_ls"`
	LastLsError string `json:"last_ls_error"`
	Repos       int64  `json:"repos"`
	// Relist says the section changed since the last listing: the host is
	// listed at the next ls-troves, whatever its ls-interval says.
	Relist bool `json:"relist"`
}

func hostWire(h statedb.Host) hostJSON {
	return hostJSON{
		Host: h.Name, Type: h.Type, Protocol: h.Protocol, LsInterval: h.LsInterval,
		Interval: h.Interval, Timeout: h.Timeout, LastLs: h.LastLs, LastLsError: h.LastLsError,
		Repos: h.Repos, Relist: h.Relist,
	}
}

// minionJSON is a minion as the API shows it.
type minionJSON struct {
	Name     string `json:"name"`
	Host     string `json:"host"`
	PID      int64  `json:"pid"`
	LastSeen int64  `json:"last_seen"`
	JobID    *int64 `json:"job_id"`
}

func minionWire(m statedb.Minion) minionJSON {
	return minionJSON{Name: m.Name, Host: m.Host, PID: m.PID, LastSeen: m.LastSeen, JobID: m.JobID}
}
