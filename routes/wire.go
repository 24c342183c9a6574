package routes

import (
	"encoding/json"
	"strings"

	"lorrycontroller.dev/lc/control"
	"lorrycontroller.dev/lc/lorryspec"
	"lorrycontroller.dev/lc/redact"
	"lorrycontroller.dev/lc/statedb"
	"lorrycontroller.dev/lc/wire"
)

// lorryJSON is a run-queue entry as the API shows it.
type lorryJSON struct {
	Path       string `json:"path"`
	Text       string `json:"text"`
	Kind       string `json:"kind"`
	FromHost   string `json:"from_host"`
	FromPath   string `json:"from_path"`
	Generated  bool   `json:"generated"`
	RunningJob *int64 `json:"running_job"`
	LastRun    *int64 `json:"last_run"`
	// NextDue is null when the entry is never due: hard-failed, or
	// with a schedule that has no event left. The database says so with
	// a time beyond any clock, which is beyond what a JSON number holds
	// exactly in JavaScript too.
	NextDue      *int64 `json:"next_due"`
	Interval     int64  `json:"interval"`
	LorryTimeout int64  `json:"lorry_timeout"`
	DiskUsage    *int64 `json:"disk_usage"`
	LastRunExit  *int64 `json:"last_run_exit"`
	LastRunError string `json:"last_run_error"`
	Description  string `json:"description"`
	// DefaultBranch is the upstream's, for the downstream repository.
	DefaultBranch string `json:"default_branch"`
	// Commit and Runtime are a scraper's: the CONFGIT commit it was read
	// from and its runtime there. Empty and null for a lorry.
	Commit  string            `json:"commit"`
	Runtime *lorryRuntimeJSON `json:"runtime"`
	// UpstreamHead is the branch the upstream's HEAD named at the last
	// successful job, which the downstream's default branch follows.
	UpstreamHead string `json:"upstream_head"`
	Queue        string `json:"queue"`
	// Schedule says in words when the entry runs; null when its interval
	// decides.
	Schedule *string `json:"schedule"`
	// State is ok, failing, backing-off or hard-failed, after the
	// ConsecutiveFailures since LastSuccess; BackoffUntil is when a
	// backoff lets it run again (0 for none).
	State               string `json:"state"`
	ConsecutiveFailures int64  `json:"consecutive_failures"`
	LastSuccess         *int64 `json:"last_success"`
	BackoffUntil        int64  `json:"backoff_until"`
	LastErrorClass      string `json:"last_error_class"`
	MaxBackoff          int64  `json:"max_backoff"`
	HardFailAfter       int64  `json:"hard_fail_after"`
}

type lorryRuntimeJSON struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	ID      string `json:"id"`
	Python  string `json:"python"`
}

// lorryWire shows a lorry. Its spec may hold a clone URL with credentials,
// or a scraper's secrets in its env, which only the minion is given in
// full.
func lorryWire(l statedb.Lorry) lorryJSON {
	known := redact.KnownInJSON(l.Text)
	var rt *lorryRuntimeJSON
	if l.Runtime.ID != "" {
		rt = &lorryRuntimeJSON{Name: l.Runtime.Name, Version: l.Runtime.Version, ID: l.Runtime.ID, Python: l.Runtime.Python}
	}
	return lorryJSON{
		Commit: l.CommitID, Runtime: rt,
		Path: l.Path, Text: redactText(known, l.Kind, l.Text), Kind: l.Kind, FromHost: l.FromHost, FromPath: l.FromPath,
		Generated: l.Generated, RunningJob: l.RunningJob, LastRun: l.LastRun, NextDue: jsonTime(l.NextDue),
		Interval: l.Interval, LorryTimeout: l.Timeout, DiskUsage: l.DiskUsage,
		LastRunExit: l.LastRunExit, LastRunError: known.Text(l.LastRunError),
		Description: l.Description, DefaultBranch: l.DefaultBranch, UpstreamHead: l.UpstreamHead,
		Queue:    l.Queue,
		Schedule: control.DescribeSchedule(l.Schedule),

		State: l.State, ConsecutiveFailures: l.ConsecutiveFailures, LastSuccess: l.LastSuccess,
		BackoffUntil: l.BackoffUntil, LastErrorClass: l.LastErrorClass,
		MaxBackoff: l.MaxBackoff, HardFailAfter: l.HardFailAfter,
	}
}

// maxJSONInt is the largest integer that every JSON reader holds
// exactly, JavaScript's included (2^53-1).
const maxJSONInt = 1<<53 - 1

// jsonTime is t, or nil for a time beyond maxJSONInt: never.
func jsonTime(t int64) *int64 {
	if t > maxJSONInt || t < -maxJSONInt {
		return nil
	}
	return &t
}

// list is s, or an empty list for nil: a list in an answer is [] when
// empty, never null.
func list[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// hidden stands for a secret value.
const hidden = "***"

// redactText hides what a spec may hold of secrets: the credentials of
// URLs, known are those of its addresses, and for a scraper the values of
// its env, whose names stay.
func redactText(known *redact.Known, kind, text string) string {
	if kind != wire.KindScraper {
		return known.JSON(text)
	}
	v, err := lorryspec.DecodeJSON([]byte(text))
	if err != nil {
		return hidden
	}
	if m, ok := v.(map[string]any); ok {
		for _, spec := range m {
			sm, ok := spec.(map[string]any)
			if !ok {
				continue
			}
			if env, ok := sm["env"].(map[string]any); ok {
				for k := range env {
					env[k] = hidden
				}
			}
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return hidden
	}
	return known.JSON(string(b))
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
	// Runtime is a scraper's runtime and whether the minion built it for
	// this job; null for a lorry.
	Runtime *jobRuntimeJSON `json:"runtime"`
	// Refs are the refs a successful job changed downstream; null when
	// unknown.
	Refs *wire.RefChanges `json:"refs"`
	// ErrorClass is the kind of the job's failure; "" when none or
	// unknown. LorryState is the state its end left its lorry in, which
	// shows where a backoff or a hard-fail began; "" while it runs.
	ErrorClass string `json:"error_class"`
	LorryState string `json:"lorry_state"`
}

// jobRuntimeJSON is the runtime of a scraper's job. Built and
// BuildSeconds are null until the minion reports them.
type jobRuntimeJSON struct {
	Name         string   `json:"name"`
	Version      string   `json:"version"`
	ID           string   `json:"id"`
	Built        *bool    `json:"built"`
	BuildSeconds *float64 `json:"build_seconds"`
}

func jobWire(j statedb.Job, output string) jobJSON {
	var rt *jobRuntimeJSON
	if j.Runtime.ID != "" {
		rt = &jobRuntimeJSON{Name: j.Runtime.Name, Version: j.Runtime.Version, ID: j.Runtime.ID,
			Built: j.RuntimeBuilt, BuildSeconds: j.RuntimeBuildSeconds}
	}
	return jobJSON{
		Runtime: rt,
		JobID:   j.ID, Path: j.Path, Kind: j.Kind, Minion: j.Minion, Host: j.Host, PID: j.PID,
		Started: j.Started, Ended: j.Ended, Updated: j.Updated, Status: j.Status, Exit: j.Exit,
		Kill: j.Kill, Timeout: j.Timeout, DiskUsage: j.DiskUsage, OutputBytes: j.OutputBytes,
		CutBytes: j.CutBytes, Output: strings.ToValidUTF8(output, "\uFFFD"),
		ErrorClass: j.ErrorClass, LorryState: j.LorryState,
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
	// Vanished says what the last listing that found repositories gone
	// did to their downstream repositories (on-vanish); "" for nothing.
	Vanished string `json:"vanished"`
}

func hostWire(h statedb.Host) hostJSON {
	return hostJSON{
		Host: h.Name, Type: h.Type, Protocol: h.Protocol, LsInterval: h.LsInterval,
		Interval: h.Interval, Timeout: h.Timeout, LastLs: h.LastLs, LastLsError: h.LastLsError,
		Repos: h.Repos, Relist: h.Relist, Vanished: h.Vanished,
	}
}

// minionJSON is a minion as the API shows it.
type minionJSON struct {
	Name     string `json:"name"`
	Host     string `json:"host"`
	PID      int64  `json:"pid"`
	LastSeen int64  `json:"last_seen"`
	JobID    *int64 `json:"job_id"`
	// Health is NEW, HEALTHY, UNHEALTHY or MUST_DIE (retired).
	Health string `json:"health"`
	// Retired and Kill say whether it is retired, and whether its job is
	// killed rather than finished first.
	Retired bool `json:"retired"`
	Kill    bool `json:"kill"`
}

// minionWire shows m at now, given the ghost timeout in seconds.
func minionWire(m statedb.Minion, now, ghostTimeout int64) minionJSON {
	return minionJSON{Name: m.Name, Host: m.Host, PID: m.PID, LastSeen: m.LastSeen, JobID: m.JobID,
		Health: control.MinionHealth(m, now, ghostTimeout), Retired: m.Retire, Kill: m.Kill}
}
