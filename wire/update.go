package wire

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// ExitRunning is the exit of a job-update for a job still running.
const ExitRunning = "no"

// Limits of the protocol.
const (
	// MaxUpdateBody bounds the body of a job-update; a minion sends its
	// output in pieces well under it.
	MaxUpdateBody = 32 << 20
	// MaxErrorClass bounds the length of an error class.
	MaxErrorClass = 32
)

// StreamFields are the fields of a job-update that may be large, the
// job's output, which the WEBAPP reads as streams.
var StreamFields = []string{"stdout", "stderr"}

// Update is the body of job-update.
type Update struct {
	JobID int64
	// Minion and PID name the minion that reports; the WEBAPP refuses an
	// update of a job that is another's. "" and 0 are not checked, as
	// from a minion before names.
	Minion string
	PID    int64
	// Exit is the job's exit code in its final update; nil while it runs.
	Exit *int64
	// Stdout and Stderr are the output printed since the last update
	// that reached the WEBAPP.
	Stdout, Stderr string
	// CutBytes is how much output the minion dropped, to keep its own
	// copy bounded, just before this update's output.
	CutBytes int64
	// StdoutOffset and StderrOffset are where Stdout and Stderr start in
	// their streams: how many bytes the job printed to each before them,
	// delivered or cut (the cut of this update included). The WEBAPP
	// stores only what it does not have yet, so that an update sent
	// again after its answer was lost adds nothing twice. Nil, as from
	// a minion before offsets, appends the output whole; they are sent
	// together or not at all.
	StdoutOffset, StderrOffset *int64
	// DiskUsage is the size of the job's working area, in bytes, measured
	// after the job; nil when not measured.
	DiskUsage *int64
	// RuntimeBuilt and RuntimeBuildSeconds say how a scraper's runtime
	// was got ready; nil when not said.
	RuntimeBuilt        *bool
	RuntimeBuildSeconds *float64
	// Head is the branch, without refs/heads/, that the upstream's HEAD
	// named: with a final exit of 0 only.
	Head string
	// Refs are the refs a successful run changed: with a final exit of 0
	// only.
	Refs *RefChanges
	// ErrorClass is the kind of failure lorry found, a short word of
	// lower-case letters and "-": with a final exit other than 0 only.
	ErrorClass string
	// Stopping says that the minion killed the job for a reason of its
	// own: it was itself told to stop, or the job's lease ran out before
	// an update reached the WEBAPP. With a final exit other than 0 only.
	// The WEBAPP then ends the job as killed, which is no failure of its
	// lorry.
	Stopping bool
}

// Form encodes u as the minion sends it: stdout and stderr always, the
// optional fields when set.
func (u Update) Form() url.Values {
	exit := ExitRunning
	if u.Exit != nil {
		exit = strconv.FormatInt(*u.Exit, 10)
	}
	form := url.Values{
		"job_id": {strconv.FormatInt(u.JobID, 10)},
		"minion": {u.Minion},
		"pid":    {strconv.FormatInt(u.PID, 10)},
		"exit":   {exit},
		"stdout": {u.Stdout},
		"stderr": {u.Stderr},
	}
	if u.CutBytes > 0 {
		form.Set("cut_bytes", strconv.FormatInt(u.CutBytes, 10))
	}
	if u.StdoutOffset != nil && u.StderrOffset != nil {
		form.Set("stdout_offset", strconv.FormatInt(*u.StdoutOffset, 10))
		form.Set("stderr_offset", strconv.FormatInt(*u.StderrOffset, 10))
	}
	if u.DiskUsage != nil {
		form.Set("disk_usage", strconv.FormatInt(*u.DiskUsage, 10))
	}
	if u.Head != "" {
		form.Set("head", u.Head)
	}
	if u.Refs != nil {
		// The fields are all strings, bools and slices: encoding them
		// cannot fail.
		data, _ := json.Marshal(u.Refs)
		form.Set("refs", string(data))
	}
	if u.RuntimeBuilt != nil {
		form.Set("runtime_built", strconv.FormatBool(*u.RuntimeBuilt))
	}
	if u.RuntimeBuildSeconds != nil {
		form.Set("runtime_build_seconds", strconv.FormatFloat(*u.RuntimeBuildSeconds, 'f', 3, 64))
	}
	if u.ErrorClass != "" {
		form.Set("error_class", u.ErrorClass)
	}
	if u.Stopping {
		form.Set("stopping", "true")
	}
	return form
}

// ParseUpdate decodes the parameters of job-update but its output, which
// the WEBAPP reads as streams; stdout and stderr are taken when p has
// them. Every value is checked for what the protocol allows; whether the
// minion's name is one a minion may have, and whether the job is the
// minion's, are the WEBAPP's to check.
func ParseUpdate(p map[string]string) (Update, error) {
	u := Update{Minion: p["minion"], Stdout: p["stdout"], Stderr: p["stderr"]}
	id, err := optionalInt(p, "job_id")
	switch {
	case err != nil:
		return u, err
	case id == nil:
		return u, fmt.Errorf("missing parameter job_id")
	case *id <= 0:
		return u, fmt.Errorf("job_id %d is not a job id", *id)
	}
	u.JobID = *id
	if pid, err := optionalInt(p, "pid"); err != nil {
		return u, err
	} else if pid != nil {
		u.PID = *pid
	}
	switch e := p["exit"]; e {
	case "", ExitRunning:
	default:
		n, err := strconv.ParseInt(e, 10, 64)
		if err != nil {
			return u, fmt.Errorf("exit %q is neither %q nor an exit code", e, ExitRunning)
		}
		u.Exit = &n
	}
	if u.DiskUsage, err = optionalInt(p, "disk_usage"); err != nil {
		return u, err
	}
	if cut, err := optionalInt(p, "cut_bytes"); err != nil {
		return u, err
	} else if cut != nil {
		if *cut < 0 {
			return u, fmt.Errorf("cut_bytes %d is negative", *cut)
		}
		u.CutBytes = *cut
	}
	if err := parseOffsets(p, &u); err != nil {
		return u, err
	}
	if err := parseRuntime(p, &u); err != nil {
		return u, err
	}
	if u.Head = p["head"]; u.Head != "" {
		if why := BadBranch(u.Head); why != "" {
			return u, fmt.Errorf("parameter head: %q is not a branch name: %s", u.Head, why)
		}
		if u.Exit == nil {
			return u, fmt.Errorf("head is reported with the final update only, with exit")
		}
	}
	if u.Refs, err = ParseRefs(p["refs"]); err != nil {
		return u, fmt.Errorf("parameter refs: %w", err)
	}
	if u.Refs != nil && u.Exit == nil {
		return u, fmt.Errorf("refs are reported with the final update only, with exit")
	}
	u.ErrorClass = p["error_class"]
	if len(u.ErrorClass) > MaxErrorClass || strings.Trim(u.ErrorClass, "abcdefghijklmnopqrstuvwxyz-") != "" {
		return u, fmt.Errorf("parameter error_class: %q is not an error class", u.ErrorClass)
	}
	if u.ErrorClass != "" && u.Exit == nil {
		return u, fmt.Errorf("error_class is reported with the final update only, with exit")
	}
	if v := p["stopping"]; v != "" {
		if u.Stopping, err = strconv.ParseBool(v); err != nil {
			return u, fmt.Errorf("parameter stopping: %q is neither true nor false", v)
		}
		if u.Stopping && (u.Exit == nil || *u.Exit == 0) {
			return u, fmt.Errorf("stopping is reported with the final update of a job that did not succeed only, with its exit")
		}
	}
	return u, nil
}

// parseOffsets reads stdout_offset and stderr_offset, which go together.
func parseOffsets(p map[string]string, u *Update) error {
	var err error
	if u.StdoutOffset, err = optionalInt(p, "stdout_offset"); err != nil {
		return err
	}
	if u.StderrOffset, err = optionalInt(p, "stderr_offset"); err != nil {
		return err
	}
	if (u.StdoutOffset == nil) != (u.StderrOffset == nil) {
		return fmt.Errorf("stdout_offset and stderr_offset are sent together or not at all")
	}
	for name, off := range map[string]*int64{"stdout_offset": u.StdoutOffset, "stderr_offset": u.StderrOffset} {
		if off != nil && *off < 0 {
			return fmt.Errorf("parameter %s: %d is negative", name, *off)
		}
	}
	return nil
}

// parseRuntime reads runtime_built ("true" or "false") and
// runtime_build_seconds.
func parseRuntime(p map[string]string, u *Update) error {
	if v := p["runtime_built"]; v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("parameter runtime_built: %q is neither true nor false", v)
		}
		u.RuntimeBuilt = &b
	}
	if v := p["runtime_build_seconds"]; v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || f != f || f > 1e12 {
			return fmt.Errorf("parameter runtime_build_seconds: %q is not a number of seconds", v)
		}
		u.RuntimeBuildSeconds = &f
	}
	return nil
}

// optionalInt reads an integer parameter; nil when absent or empty.
func optionalInt(p map[string]string, name string) (*int64, error) {
	v := p[name]
	if v == "" {
		return nil, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("parameter %s: %q is not an integer", name, v)
	}
	return &n, nil
}

// UpdateGap is the answer, with status 416, to a job-update whose output
// starts past what the WEBAPP has of a stream, leaving out bytes that
// cut_bytes does not account for. The minion sends again from these
// offsets, what the WEBAPP has of each stream, counting the bytes it no
// longer has as cut.
type UpdateGap struct {
	Error        string `json:"error"`
	StdoutOffset int64  `json:"stdout_offset"`
	StderrOffset int64  `json:"stderr_offset"`
}

// UpdateAnswer is the answer to job-update.
type UpdateAnswer struct {
	// Kill says to kill the job: an operator stopped it, or it ran past
	// its lorry-timeout.
	Kill bool `json:"kill"`
	// Retire says that the minion is retired: it exits once the job is
	// over.
	Retire bool `json:"retire,omitempty"`
	LeaseTerms
}
