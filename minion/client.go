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
	"strings"
	"time"

	"lorrycontroller.dev/lc/proc"
	"lorrycontroller.dev/lc/wire"
)

// job is a job the WEBAPP handed out, and what the minion learns of it
// as it runs.
type job struct {
	wire.Offer

	// head is the branch the upstream's HEAD named, as lorry found it,
	// sent with the final update of a job that succeeded.
	head string
	// refs are the refs the job changed, sent with the final update of a
	// job that succeeded.
	refs *wire.RefChanges
	// errorClass is the class lorry gave the job's failure, sent with
	// the final update of a job that failed.
	errorClass string
	// stopping says that the job ended because the minion killed it for
	// a reason of its own (it was stopping, or the job's lease ran out
	// before an update reached the WEBAPP), sent with the final update
	// of a job that did not succeed.
	stopping bool
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
	// watchdog, while the job's processes run, kills them at the end of
	// the lease if the minion cannot (Minion.guard).
	watchdog *proc.Watchdog
}

// lorryFlags are the flags of lorry that the WEBAPP chose for the job.
func (j *job) lorryFlags() []string {
	if j.AllowLocalSources {
		return []string{"--allow-local-sources"}
	}
	return nil
}

// renew takes the terms of an answer to a request sent at sent.
func (j *job) renew(t wire.LeaseTerms, sent time.Time) {
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
	body   []byte
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
	req := wire.JobRequest{Minion: m.cfg.Name, Host: m.cfg.Host, PID: int64(m.cfg.Pid),
		Queues: wire.List(m.cfg.Queues), IgnoreQueues: wire.List(m.cfg.IgnoreQueues), Kinds: m.onlyKinds()}
	status, body, err := m.post(ctx, "give-me-job", req.Form())
	if err != nil {
		return nil, err
	}
	if status == http.StatusNoContent {
		return nil, nil
	}
	var j job
	if err := json.Unmarshal(body, &j.Offer); err != nil {
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
		j.Kind = wire.KindLorry
	}
	j.renew(j.LeaseTerms, sent)
	return &j, nil
}

// jobUpdate reports on job j with the output of u; exit is updateRunning
// while the job runs, and diskUsage is sent when not nil. It returns
// whether the WEBAPP wants the job killed, and renews the job's lease.
func (m *Minion) jobUpdate(ctx context.Context, j *job, exit int, u update, diskUsage *int64) (bool, error) {
	sent := time.Now()
	upd := wire.Update{JobID: j.ID, Minion: m.cfg.Name, PID: int64(m.cfg.Pid),
		Stdout: string(u.stdout.data), Stderr: string(u.stderr.data), CutBytes: u.cut(), DiskUsage: diskUsage,
		StdoutOffset: &u.stdout.offset, StderrOffset: &u.stderr.offset}
	if exit != updateRunning {
		e := int64(exit)
		upd.Exit = &e
	}
	if exit == 0 {
		upd.Head, upd.Refs = j.head, j.refs
	}
	if r := j.runtime; r != nil {
		upd.RuntimeBuilt, upd.RuntimeBuildSeconds = &r.built, &r.seconds
	}
	if exit != 0 && exit != updateRunning {
		upd.ErrorClass, upd.Stopping = j.errorClass, j.stopping
	}
	_, body, err := m.post(ctx, "job-update", upd.Form())
	var se *StatusError
	if errors.As(err, &se) && se.Status == http.StatusRequestedRangeNotSatisfiable {
		var gap wire.UpdateGap
		if json.Unmarshal(se.body, &gap) == nil {
			return false, &outputGap{stdout: gap.StdoutOffset, stderr: gap.StderrOffset, err: err}
		}
	}
	if err != nil {
		return false, err
	}
	j.runtime = nil
	var answer wire.UpdateAnswer
	if err := json.Unmarshal(body, &answer); err != nil {
		// The update was accepted, so its output must not be sent
		// again; only the kill flag is unknown, and the next update
		// asks again.
		m.log.Warn("job-update: cannot decode answer", "job_id", j.ID, "err", err, "body", snippet(body))
	}
	j.renew(answer.LeaseTerms, sent)
	if j.watchdog != nil {
		if err := j.watchdog.Renew(j.leaseEnd()); err != nil {
			m.log.Warn("cannot renew the job's watchdog", "job_id", j.ID, "err", err)
		}
	}
	if answer.Retire && !m.retired.Swap(true) {
		m.log.Info("webapp retired this minion; it exits after the job", "job_id", j.ID, "kill", answer.Kill)
	}
	return answer.Kill, nil
}

// outputGap is the WEBAPP's refusal of an update whose output starts
// past what it has of the job's output: it has stdout and stderr bytes
// of the streams. The minion sends again from there (output.rewind).
type outputGap struct {
	stdout, stderr int64
	err            error
}

func (g *outputGap) Error() string { return g.err.Error() }
func (g *outputGap) Unwrap() error { return g.err }

// post sends form to route of the WEBAPP in use, or of the next that
// answers (ask), and returns a 2xx answer; any other status is a
// *StatusError.
func (m *Minion) post(ctx context.Context, route string, form url.Values) (int, []byte, error) {
	var status int
	var body []byte
	err := m.ask(ctx, route, true, func(ctx context.Context, base string) error {
		var err error
		status, body, err = m.postTo(ctx, base, route, form)
		return err
	})
	return status, body, err
}

// postTo is post to the WEBAPP at base.
func (m *Minion) postTo(ctx context.Context, base, route string, form url.Values) (int, []byte, error) {
	u := base + "/1.0/" + route
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
		return 0, nil, &StatusError{Route: route, Status: resp.StatusCode, Msg: errorText(body), body: body}
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
