package minion

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// job is the WEBAPP's answer to give-me-job. Fields the minion does not use
// are ignored.
type job struct {
	ID      int64  `json:"job_id"`
	Path    string `json:"path"`
	Kind    string `json:"kind"`
	Text    string `json:"text"`
	Timeout int64  `json:"timeout"` // seconds; enforced by the WEBAPP
	PushURL string `json:"push_url"`
	// Retire, alone in an answer, says that the minion is retired.
	Retire bool `json:"retire"`

	// head is the branch the upstream's HEAD named, as lorry found it,
	// sent with the final update of a job that succeeded.
	head string
	// refs are the refs the job changed, as JSON, sent with the final
	// update of a job that succeeded.
	refs string
	// errorClass is the class lorry gave the job's failure, sent with
	// the final update of a job that failed.
	errorClass string
	// AllowLocalSources is the WEBAPP's --allow-local-sources, which
	// lorry is given as its own.
	AllowLocalSources bool `json:"allow_local_sources"`
	leaseTerms
	OutputLimit int64 `json:"output_limit"` // bytes kept by the WEBAPP; 0: not said

	// Scraper is what a job of kind scraper runs (scraper.go).
	Scraper *scraperSpec `json:"scraper"`
	// duDir is the directory whose disk usage the final update reports,
	// when not the lorry's working directory.
	duDir string
	// runtime, once the scraper's runtime is ready, is reported with
	// the next update that reaches the WEBAPP.
	runtime *runtimeReport

	// granted is when the lease was last renewed: when the request whose
	// answer renewed it was sent, since the WEBAPP counted from then or
	// later.
	granted time.Time
}

// lorryFlags are the flags of lorry that the WEBAPP chose for the job.
func (j *job) lorryFlags() []string {
	if j.AllowLocalSources {
		return []string{"--allow-local-sources"}
	}
	return nil
}

// leaseTerms come with every answer about a job; zero values mean the
// WEBAPP did not say.
type leaseTerms struct {
	Lease     int64 `json:"lease"`      // seconds without a delivered update before the job is killed
	KillGrace int64 `json:"kill_grace"` // seconds, at most, between SIGTERM and SIGKILL
}

// renew takes the terms of an answer to a request sent at sent.
func (j *job) renew(t leaseTerms, sent time.Time) {
	if t.Lease > 0 {
		j.Lease = t.Lease
	}
	if t.KillGrace > 0 {
		j.KillGrace = t.KillGrace
	}
	j.granted = sent
}

// leaseEnd is when the job must be killed if no update has been delivered
// by then; zero when the WEBAPP gave no lease.
func (j *job) leaseEnd() time.Time {
	if j.Lease <= 0 {
		return time.Time{}
	}
	return j.granted.Add(time.Duration(j.Lease) * time.Second)
}

// updateRunning is the exit value of a job-update for a job still running.
const updateRunning = -1

// maxAnswer bounds how much of an answer is read; a job's spec text is the
// largest thing the WEBAPP sends.
const maxAnswer = 16 << 20

// StatusError is an answer from the WEBAPP with an unexpected status.
type StatusError struct {
	Route  string
	Status int
	Msg    string // the answer's "error" text, or the start of its body
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s: %d %s: %s", e.Route, e.Status, http.StatusText(e.Status), e.Msg)
}

// retryable says whether err may go away by itself: the WEBAPP could not be
// reached, or it failed or was overloaded. Answers the WEBAPP means, such as
// 404 and 409, are not retried.
func retryable(err error) bool {
	var se *StatusError
	if !errors.As(err, &se) {
		return true
	}
	return se.Status >= 500 || se.Status == http.StatusRequestTimeout || se.Status == http.StatusTooManyRequests
}

// tooLarge says whether the WEBAPP refused a request for its size: the
// minion sends less at a time and tries again.
func tooLarge(err error) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Status == http.StatusRequestEntityTooLarge
}

// giveMeJob asks for a job; nil means there is nothing to do.
func (m *Minion) giveMeJob(ctx context.Context) (*job, error) {
	sent := time.Now()
	form := url.Values{
		"host":   {m.cfg.Host},
		"pid":    {strconv.Itoa(m.cfg.Pid)},
		"minion": {m.cfg.Name},
	}
	if m.cfg.Queues != "" {
		form.Set("queues", m.cfg.Queues)
	}
	if m.cfg.IgnoreQueues != "" {
		form.Set("ignore_queues", m.cfg.IgnoreQueues)
	}
	if k := m.onlyKinds(); k != "" {
		form.Set("kinds", k)
	}
	status, body, err := m.post(ctx, "give-me-job", form)
	if err != nil {
		return nil, err
	}
	if status == http.StatusNoContent {
		return nil, nil
	}
	var j job
	if err := json.Unmarshal(body, &j); err != nil {
		return nil, fmt.Errorf("give-me-job: decode answer: %w", err)
	}
	if j.Retire {
		m.retired.Store(true)
		return nil, ErrRetired
	}
	if j.ID == 0 {
		return nil, fmt.Errorf("give-me-job: answer has no job_id: %s", snippet(body))
	}
	if j.Kind == "" {
		// Every job was a lorry before jobs had kinds.
		j.Kind = KindLorry
	}
	j.renew(j.leaseTerms, sent)
	return &j, nil
}

// jobUpdate reports on job j with the output of u; exit is updateRunning
// while the job runs, and diskUsage is sent when not nil. It returns
// whether the WEBAPP wants the job killed, and renews the job's lease.
func (m *Minion) jobUpdate(ctx context.Context, j *job, exit int, u update, diskUsage *int64) (bool, error) {
	sent := time.Now()
	exitValue := "no"
	if exit != updateRunning {
		exitValue = strconv.Itoa(exit)
	}
	form := url.Values{
		"job_id": {strconv.FormatInt(j.ID, 10)},
		"minion": {m.cfg.Name},
		"pid":    {strconv.Itoa(m.cfg.Pid)},
		"exit":   {exitValue},
		"stdout": {string(u.stdout.data)},
		"stderr": {string(u.stderr.data)},
	}
	if n := u.cut(); n > 0 {
		form.Set("cut_bytes", strconv.FormatInt(n, 10))
	}
	if diskUsage != nil {
		form.Set("disk_usage", strconv.FormatInt(*diskUsage, 10))
	}
	if exit == 0 && j.head != "" {
		form.Set("head", j.head)
	}
	if exit == 0 && j.refs != "" {
		form.Set("refs", j.refs)
	}
	if r := j.runtime; r != nil {
		form.Set("runtime_built", strconv.FormatBool(r.built))
		form.Set("runtime_build_seconds", strconv.FormatFloat(r.seconds, 'f', 3, 64))
	}
	if exit != 0 && j.errorClass != "" {
		form.Set("error_class", j.errorClass)
	}
	_, body, err := m.post(ctx, "job-update", form)
	if err != nil {
		return false, err
	}
	j.runtime = nil
	var answer struct {
		Kill   bool `json:"kill"`
		Retire bool `json:"retire"`
		leaseTerms
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		// The update was accepted, so its output must not be sent
		// again; only the kill flag is unknown, and the next update
		// asks again.
		m.log.Warn("job-update: cannot decode answer", "job_id", j.ID, "err", err, "body", snippet(body))
	}
	j.renew(answer.leaseTerms, sent)
	if answer.Retire && !m.retired.Swap(true) {
		m.log.Info("webapp retired this minion; it exits after the job", "job_id", j.ID, "kill", answer.Kill)
	}
	return answer.Kill, nil
}

// post sends form to route and returns a 2xx answer; any other status is a
// *StatusError.
func (m *Minion) post(ctx context.Context, route string, form url.Values) (int, []byte, error) {
	u := strings.TrimRight(m.cfg.WebappURL, "/") + "/1.0/" + route
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		return 0, nil, fmt.Errorf("%s: %w", route, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if m.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+m.cfg.Token)
	}
	resp, err := m.client.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("%s: %w", route, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return 0, nil, fmt.Errorf("%s: read answer: %w", route, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return 0, nil, &StatusError{Route: route, Status: resp.StatusCode, Msg: errorText(body)}
	}
	return resp.StatusCode, body, nil
}

// errorText is the "error" of a JSON error answer, or the start of body when
// it is not one (a proxy's HTML page, say).
func errorText(body []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		return e.Error
	}
	return snippet(body)
}

func snippet(body []byte) string {
	body = bytes.TrimSpace(body)
	const n = 200
	if len(body) > n {
		return string(body[:n]) + "..."
	}
	return string(body)
}
