package wire

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// The kinds of job.
const (
	// KindLorry runs lorry to mirror a repository.
	KindLorry = "lorry"
	// KindScraper runs a scraper in its runtime.
	KindScraper = "scraper"
)

// EnvPushURL is the variable of lorry's environment that holds the job's
// push URL, which may carry credentials.
const EnvPushURL = "LORRY_PUSH_URL"

// EnvMirrorBaseURLPush is the variable of lorry's environment that holds
// a base push URL, for lorry run by hand; a minion never sets it, and
// clears it from lorry's environment.
const EnvMirrorBaseURLPush = "LORRY_MIRROR_BASE_URL_PUSH"

// JobRequest is the body of give-me-job.
type JobRequest struct {
	// Minion is the minion's stable name; without one, the WEBAPP names
	// it HOST-PID.
	Minion string
	Host   string
	PID    int64
	// Queues, if any, are the only queues the minion takes jobs from;
	// else it takes any but IgnoreQueues.
	Queues       []string
	IgnoreQueues []string
	// Kinds, if any, are the kinds of job the minion takes; none means
	// every kind.
	Kinds []string
}

// Form encodes r as the minion sends it.
func (r JobRequest) Form() url.Values {
	form := url.Values{
		"host":   {r.Host},
		"pid":    {strconv.FormatInt(r.PID, 10)},
		"minion": {r.Minion},
	}
	for name, list := range map[string][]string{"queues": r.Queues, "ignore_queues": r.IgnoreQueues, "kinds": r.Kinds} {
		if len(list) > 0 {
			form.Set(name, strings.Join(list, ","))
		}
	}
	return form
}

// ParseJobRequest decodes the parameters of give-me-job. Host and pid are
// required; a missing minion name is made HOST-PID. Whether the name is
// one a minion may have is the WEBAPP's to check.
func ParseJobRequest(p map[string]string) (JobRequest, error) {
	r := JobRequest{Minion: p["minion"], Host: p["host"], Queues: List(p["queues"]), IgnoreQueues: List(p["ignore_queues"])}
	pid, err := optionalInt(p, "pid")
	if err != nil {
		return r, err
	}
	if pid != nil {
		r.PID = *pid
	}
	if r.Host == "" || r.PID == 0 {
		return r, fmt.Errorf("give-me-job needs host and pid")
	}
	if r.PID < 1 {
		return r, fmt.Errorf("pid %d is no process id", r.PID)
	}
	for _, k := range List(p["kinds"]) {
		if k != KindLorry && k != KindScraper {
			return r, fmt.Errorf("kinds: %q is neither %s nor %s", k, KindLorry, KindScraper)
		}
		if !slices.Contains(r.Kinds, k) {
			r.Kinds = append(r.Kinds, k)
		}
	}
	if r.Minion == "" {
		r.Minion = r.Host + "-" + strconv.FormatInt(r.PID, 10)
	}
	return r, nil
}

// List reads a comma-separated list, as of queue names or kinds, without
// its empty items.
func List(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// Offer is the answer to give-me-job that hands out a job.
type Offer struct {
	ID   int64  `json:"job_id"`
	Path string `json:"path"`
	// Kind is KindLorry or KindScraper; "" from a WEBAPP before kinds,
	// whose every job is a lorry.
	Kind string `json:"kind"`
	// Text is the spec, as JSON text.
	Text string `json:"text"`
	// Timeout is the lorry-timeout in seconds, enforced by the WEBAPP
	// through kill.
	Timeout int64  `json:"timeout"`
	PushURL string `json:"push_url"`
	// Scraper is set for a scraper, which pushes nowhere.
	Scraper *Scraper `json:"scraper,omitempty"`
	// AllowLocalSources is passed on to lorry as --allow-local-sources.
	AllowLocalSources bool `json:"allow_local_sources"`
	LeaseTerms
	// OutputLimit is how many bytes of the job's output the WEBAPP keeps;
	// 0 when it did not say.
	OutputLimit int64 `json:"output_limit"`
	// Retire is never set in an offer: it is how a minion reads
	// [Retired] with the same decoding.
	Retire bool `json:"retire,omitempty"`
}

// Retired is the answer to give-me-job, and to every request of the
// minion's until it is un-retired, that tells a retired minion to exit.
type Retired struct {
	Retire bool `json:"retire"`
}

// LeaseTerms go with every answer about a job; zero values mean the
// WEBAPP did not say.
type LeaseTerms struct {
	// Lease is how many seconds the job may run without an update
	// reaching the WEBAPP before the minion kills it.
	Lease int64 `json:"lease"`
	// KillGrace is how many seconds, at most, the minion waits between
	// SIGTERM and SIGKILL.
	KillGrace int64 `json:"kill_grace"`
}

// Scraper is what an offer of a scraper holds: all the minion needs to
// build its runtime and run it, as of the CONFGIT commit the job was read
// from.
type Scraper struct {
	Runtime Runtime           `json:"runtime"`
	Argv    []string          `json:"argv"`
	Env     map[string]string `json:"env"`
	Config  []ConfigFile      `json:"config"`
	// FDArgs says to pass the job the descriptors of its locks.
	FDArgs bool `json:"fd_args"`
}

// Runtime names the runtime a scraper runs in, to be fetched from
// /1.0/runtime/NAME/ID.tar.
type Runtime struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	ID      string `json:"id"`
	Python  string `json:"python"`
}

// ConfigFile is a file of CONFGIT handed to a scraper; Content is sent as
// base64. Name is its base name, unique within the job.
type ConfigFile struct {
	Name    string `json:"name"`
	Path    string `json:"path"`
	Content []byte `json:"content"`
}
