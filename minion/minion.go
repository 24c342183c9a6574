// Package minion is the worker side of Lorry Controller: it asks the WEBAPP
// for a job, runs it as a child process, streams the child's output back
// while it runs, kills it when told to and reports how it ended.
//
// A minion runs one job at a time and keeps no state of its own: everything
// worth keeping is reported to the WEBAPP, so a minion that stops while the
// WEBAPP is unreachable loses only the output it could not deliver.
package minion

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"lorrycontroller/proc"
	"lorrycontroller/workarea"
)

// Config is what a Minion needs to know.
type Config struct {
	WebappURL      string        // base URL of the WEBAPP, without /1.0
	Name           string        // stable name of this minion, e.g. HOST-N
	Host           string        // host name reported with give-me-job
	Pid            int           // process id reported to the WEBAPP
	LorryCmd       string        // lorry executable run for each job
	WorkingArea    string        // directory given to lorry as --working-area
	Sleep          time.Duration // wait after the WEBAPP had nothing to do
	UpdateInterval time.Duration // time between job-update calls
	KillGrace      time.Duration // SIGTERM to SIGKILL delay when killing a job
	Token          string        // sent as "Authorization: Bearer"; "" for none

	// BackoffMin and BackoffMax bound the delay between retries while the
	// WEBAPP is unreachable; zero means 1s and 60s.
	BackoffMin time.Duration
	BackoffMax time.Duration
}

// KindLorry is the only kind of job a minion knows how to run.
const KindLorry = "lorry"

// Exit codes reported for jobs that never ran a process, chosen like a
// shell's: 127 when the command could not be started, 1 otherwise.
const (
	exitNotStarted  = 127
	exitUnsupported = 1
)

// stopTries is how many times the final update of a job is attempted once
// the minion has been told to stop, and stopTimeout bounds each attempt:
// the minion should exit promptly, but the WEBAPP should learn how the job
// ended rather than time it out as a ghost.
const (
	stopTries   = 3
	stopTimeout = 5 * time.Second
)

// Minion asks for jobs and runs them, one at a time.
type Minion struct {
	cfg    Config
	client *http.Client
	log    *slog.Logger
	// retired is set when an answer of the WEBAPP says that the minion
	// is retired: it finishes its job, if any, and exits.
	retired atomic.Bool
}

// New returns a Minion. A nil client means one with a 30s timeout; a nil
// logger discards.
func New(cfg Config, client *http.Client, logger *slog.Logger) *Minion {
	if cfg.BackoffMin <= 0 {
		cfg.BackoffMin = time.Second
	}
	if cfg.BackoffMax < cfg.BackoffMin {
		cfg.BackoffMax = max(60*time.Second, cfg.BackoffMin)
	}
	// The job runs in the working area, so relative paths given to the
	// minion would mean something else to it.
	if abs, err := filepath.Abs(cfg.WorkingArea); err == nil {
		cfg.WorkingArea = abs
	}
	if strings.ContainsRune(cfg.LorryCmd, filepath.Separator) {
		if abs, err := filepath.Abs(cfg.LorryCmd); err == nil {
			cfg.LorryCmd = abs
		}
	}
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Minion{cfg: cfg, client: client, log: logger}
}

// Run asks for and runs jobs until ctx is done, or until the WEBAPP
// retires the minion (ErrRetired). A job running then is killed and its
// end reported before Run returns.
func (m *Minion) Run(ctx context.Context) error {
	bo := m.newBackoff()
	for {
		ran, err := m.RunOnce(ctx)
		if errors.Is(err, ErrRetired) {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
		var wait time.Duration
		switch {
		case err != nil:
			wait = bo.next()
			m.log.Warn("cannot get a job", "err", err, "retry_in", wait)
		case ran:
			bo.reset()
			continue
		default:
			bo.reset()
			wait = m.cfg.Sleep
		}
		if !sleep(ctx, wait) {
			return nil
		}
	}
}

// RunOnce asks the WEBAPP for a job and, if there is one, runs it to the
// end and reports it. It says whether there was a job; an error means the
// WEBAPP could not be asked. Problems with the job itself are reported to
// the WEBAPP and logged, not returned. ErrRetired says that the WEBAPP
// retired the minion, in its answer to give-me-job or to a job-update.
func (m *Minion) RunOnce(ctx context.Context) (bool, error) {
	if m.retired.Load() {
		return false, ErrRetired
	}
	j, err := m.giveMeJob(ctx)
	if err != nil {
		return false, err
	}
	if j == nil {
		return false, nil
	}
	m.runJob(ctx, j)
	if m.retired.Load() {
		return true, ErrRetired
	}
	return true, nil
}

func (m *Minion) runJob(ctx context.Context, j *job) {
	log := m.log.With("job_id", j.ID, "path", j.Path)
	log.Info("got job", "kind", j.Kind, "timeout", j.Timeout)

	if j.Kind != KindLorry {
		msg := fmt.Sprintf("lorry-controller-minion: cannot run job of kind %q: this minion runs only %q jobs\n", j.Kind, KindLorry)
		log.Error("unsupported job kind", "kind", j.Kind)
		m.finish(ctx, log, j, exitUnsupported, output{stderr: []byte(msg)})
		return
	}

	spec, err := writeSpec(j)
	if err != nil {
		log.Error("cannot write lorry spec", "err", err)
		m.finish(ctx, log, j, exitNotStarted, output{stderr: []byte("lorry-controller-minion: " + err.Error() + "\n")})
		return
	}
	defer os.Remove(spec)

	result := m.newLorryResult(j)
	defer result.remove()
	args := []string{"--working-area", m.cfg.WorkingArea, "--result-file", result.path}
	if j.PushURL != "" {
		args = append(args, "--push-url", j.PushURL)
	}
	args = append(args, spec)
	p, err := proc.Start(proc.Command{Name: m.cfg.LorryCmd, Args: args, Dir: m.cfg.WorkingArea})
	if err != nil {
		log.Error("cannot start lorry", "err", err)
		m.finish(ctx, log, j, exitNotStarted, output{stderr: []byte("lorry-controller-minion: " + err.Error() + "\n")})
		return
	}
	log.Info("job started", "pid", p.Pid(), "lorry_cmd", m.cfg.LorryCmd)
	if !m.confirm(ctx, log, j, p) {
		return
	}

	out, ok := m.watch(ctx, log, j, p)
	if !ok {
		return
	}
	exit := p.Wait()
	if err := p.Err(); err != nil {
		log.Warn("job output may be incomplete", "err", err)
	}
	out.add(p.NewOutput())
	j.head = result.head(log, j, exit)
	m.finish(ctx, log, j, exit, out)
}

// watch sends the output of the running job every update interval, and kills
// the job when the WEBAPP asks or when ctx is done. It returns once the
// child has exited, with the output not yet delivered, or false if the job
// is no longer ours to report.
func (m *Minion) watch(ctx context.Context, log *slog.Logger, j *job, p *proc.Process) (output, bool) {
	var out output
	bo := m.newBackoff()
	timer := time.NewTimer(m.cfg.UpdateInterval)
	defer timer.Stop()
	killed := false
	for {
		select {
		case <-p.Done():
			return out, true
		case <-ctx.Done():
			log.Info("stopping: killing job", "pid", p.Pid(), "grace", m.cfg.KillGrace)
			p.Kill(m.cfg.KillGrace)
			<-p.Done()
			return out, true
		case <-timer.C:
		}

		out.add(p.NewOutput())
		n := out.sendable()
		kill, err := m.jobUpdate(ctx, j, updateRunning, n.stdout, n.stderr, nil)
		switch {
		case err == nil:
			out.drop(n)
			bo.reset()
			if kill && !killed {
				log.Info("webapp asked to kill job", "pid", p.Pid(), "grace", m.cfg.KillGrace)
				p.Kill(m.cfg.KillGrace)
				killed = true
			}
			timer.Reset(m.cfg.UpdateInterval)
		case ctx.Err() != nil:
			// The next select sees it.
		case retryable(err):
			wait := bo.next()
			log.Warn("webapp unreachable; job keeps running", "err", err, "retry_in", wait)
			timer.Reset(wait)
		default:
			// 404 or 409: the WEBAPP has ended the job or given it to
			// someone else, so this run is orphaned work. Any other
			// refusal would be repeated forever; the WEBAPP times the
			// job out as a ghost either way.
			log.Warn("webapp refused update; killing job", "err", err, "pid", p.Pid())
			p.Kill(m.cfg.KillGrace)
			exit := p.Wait()
			log.Info("job killed", "exit", exit)
			return out, false
		}
	}
}

// finish delivers the final update: retried until the WEBAPP has it, or
// until ctx is done, after which a few quick tries are made.
func (m *Minion) finish(ctx context.Context, log *slog.Logger, j *job, exit int, out output) {
	var du *int64
	n, err := workarea.DiskUsage(workarea.Dir(m.cfg.WorkingArea, j.Path))
	if err != nil {
		log.Warn("cannot measure disk usage", "err", err)
	} else {
		du = &n
	}
	log = log.With("exit", exit)

	bo := m.newBackoff()
	for ctx.Err() == nil {
		_, err := m.jobUpdate(ctx, j, exit, out.stdout, out.stderr, du)
		switch {
		case err == nil:
			log.Info("job finished", "disk_usage", n)
			return
		case ctx.Err() != nil:
		case retryable(err):
			wait := bo.next()
			log.Warn("webapp unreachable; will retry final update", "err", err, "retry_in", wait)
			sleep(ctx, wait)
		default:
			log.Error("webapp refused final update", "err", err)
			return
		}
	}

	// Told to stop: the caller's context is done, but the WEBAPP should
	// still hear how the job ended.
	stopCtx := context.WithoutCancel(ctx)
	for try := 1; try <= stopTries; try++ {
		tctx, cancel := context.WithTimeout(stopCtx, stopTimeout)
		_, err := m.jobUpdate(tctx, j, exit, out.stdout, out.stderr, du)
		cancel()
		switch {
		case err == nil:
			log.Info("job finished", "disk_usage", n)
			return
		case !retryable(err):
			log.Error("webapp refused final update", "err", err)
			return
		}
		log.Warn("final update failed", "err", err, "try", try)
		if try < stopTries {
			time.Sleep(time.Duration(try) * 100 * time.Millisecond)
		}
	}
	log.Error("final update not delivered; the webapp will treat the job as lost")
}

// writeSpec saves the job's lorry spec to a temporary file for lorry to read.
func writeSpec(j *job) (string, error) {
	f, err := os.CreateTemp("", "lorry-controller-job-"+strconv.FormatInt(j.ID, 10)+"-*.lorry")
	if err != nil {
		return "", fmt.Errorf("write spec of job %d: %w", j.ID, err)
	}
	_, err = f.WriteString(j.Text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("write spec of job %d to %s: %w", j.ID, f.Name(), err)
	}
	return f.Name(), nil
}

// output is what the job wrote and the WEBAPP has not yet acknowledged.
type output struct {
	stdout, stderr []byte
}

func (o *output) add(stdout, stderr []byte) {
	o.stdout = append(o.stdout, stdout...)
	o.stderr = append(o.stderr, stderr...)
}

// sendable is the part of o to send in a running update: everything but a
// trailing partial UTF-8 sequence, which the next read will complete, so
// that each chunk the WEBAPP stores is valid text if the job writes text.
func (o *output) sendable() output {
	return output{
		stdout: o.stdout[:completeRunes(o.stdout)],
		stderr: o.stderr[:completeRunes(o.stderr)],
	}
}

// drop forgets the part of o that was delivered.
func (o *output) drop(sent output) {
	o.stdout = append([]byte(nil), o.stdout[len(sent.stdout):]...)
	o.stderr = append([]byte(nil), o.stderr[len(sent.stderr):]...)
}

// completeRunes returns the length of b without a trailing incomplete UTF-8
// sequence. Bytes that are not UTF-8 at all are not held back.
func completeRunes(b []byte) int {
	for i := len(b) - 1; i >= 0 && i > len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if utf8.FullRune(b[i:]) {
				return len(b)
			}
			return i
		}
	}
	return len(b)
}

// backoff doubles the delay between retries up to a cap.
type backoff struct {
	min, max, cur time.Duration
}

func (m *Minion) newBackoff() *backoff {
	return &backoff{min: m.cfg.BackoffMin, max: m.cfg.BackoffMax}
}

func (b *backoff) next() time.Duration {
	if b.cur == 0 {
		b.cur = b.min
	}
	d := b.cur
	b.cur = min(2*b.cur, b.max)
	return d
}

func (b *backoff) reset() { b.cur = 0 }

// sleep waits for d or until ctx is done, and says whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
