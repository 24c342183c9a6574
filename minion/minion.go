// Package minion is the worker side of Lorry Controller: it asks the WEBAPP
// for a job, runs it as a child process, streams the child's output back
// while it runs, kills it when told to and reports how it ended.
//
// A minion runs one job at a time and keeps no state of its own beyond the
// files of the job it runs: everything worth keeping is reported to the
// WEBAPP, so a minion that stops while the WEBAPP is unreachable loses only
// the output it could not deliver. A minion killed outright leaves its job's
// files in the working area, and kills what is left of the job when it
// starts again (CleanUp).
//
// A minion may be given several WEBAPPs that share one state database. It
// asks one of them and stays with it, and asks the next when it does not
// answer, so that a job's reports reach one of them within its lease.
package minion

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"lorrycontroller.dev/lc/proc"
	"lorrycontroller.dev/lc/venv"
	"lorrycontroller.dev/lc/wire"
)

// Config is what a Minion needs to know.
type Config struct {
	// WebappURLs are the base URLs of the WEBAPPs, without /1.0: one,
	// or several that share one state database. The minion asks the
	// first, and the next when the one it asks does not answer.
	WebappURLs     []string
	Name           string        // stable name of this minion, e.g. HOST-N
	Host           string        // host name reported with give-me-job
	Pid            int           // process id reported to the WEBAPP
	LorryCmd       string        // lorry executable run for each job
	WorkingArea    string        // directory given to lorry as --working-area
	Sleep          time.Duration // wait after the WEBAPP had nothing to do
	UpdateInterval time.Duration // time between job-update calls
	KillGrace      time.Duration // SIGTERM to SIGKILL delay when killing a job
	Token          string        // sent as "Authorization: Bearer"; "" for none
	// Queues, comma-separated, are the only queues to take jobs from;
	// else IgnoreQueues are those not to. The WEBAPP decides.
	Queues       string
	IgnoreQueues string
	// Kinds are the kinds of job the minion takes (KindLorry,
	// KindScraper); none means both. The WEBAPP hands it no others, and
	// it refuses to run any other it is handed.
	Kinds []string

	// Runtimes is the cache of the scrapers' runtimes; without it, the
	// minion fails scraper jobs.
	Runtimes *venv.Cache
	// JobEnv names the variables of the minion's environment that a
	// scraper is given; it sees no others but TZ.
	JobEnv []string
	// GitConfig, when set, is the file of git configuration that lorry's
	// git reads (lorry --git-config), instead of .gitconfig in the home
	// of the user lorry runs as. The WEBAPP cannot name another.
	GitConfig string
	// JobUser, when set, is the user that jobs, lorry and scrapers and
	// the builds of runtimes, run as: --job-user. The minion's own
	// files (its token, its locks) stay out of their reach.
	JobUser *proc.User
	// Watchdog, when set, is the program that watches each job
	// (proc.StartWatchdog): the minion itself, which runs as the
	// watchdog when given proc.WatchdogArg. It kills the job by the end
	// of its lease even while the minion cannot, stopped or dead.
	Watchdog string
	// Changed, when set, is asked between jobs whether the minion
	// should stop so as to start again as a new program (see
	// Restart); it returns why, or "".
	Changed func() string

	// BackoffMin and BackoffMax bound the delay between retries while the
	// WEBAPP is unreachable; zero means 1s and 60s.
	BackoffMin time.Duration
	BackoffMax time.Duration
}

// KindLorry is a job that runs lorry to mirror a repository.
const KindLorry = wire.KindLorry

// Exit codes reported for jobs that never ran a process, chosen like a
// shell's: 127 when the command could not be started, 1 otherwise.
const (
	exitNotStarted  = 127
	exitUnsupported = 1
)

// Minion asks for jobs and runs them, one at a time.
type Minion struct {
	cfg     Config
	client  *http.Client
	webapps *webapps
	log     *slog.Logger
	// retired is set when an answer of the WEBAPP says that the minion
	// is retired: it finishes its job, if any, and exits.
	retired atomic.Bool

	// workDir is the scraper working directory, once taken.
	workDir *venv.WorkDir
	// restart is why Run returned between jobs, if Changed said so.
	restart string
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
	if cfg.GitConfig != "" {
		if abs, err := filepath.Abs(cfg.GitConfig); err == nil {
			cfg.GitConfig = abs
		}
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
	return &Minion{cfg: cfg, client: client, webapps: newWebapps(cfg.WebappURLs), log: logger}
}

// Run asks for and runs jobs until ctx is done, or until the WEBAPP
// retires the minion (ErrRetired). A job running then is killed and its
// end reported before Run returns.
func (m *Minion) Run(ctx context.Context) error {
	bo := m.newBackoff()
	for {
		if m.cfg.Changed != nil {
			if why := m.cfg.Changed(); why != "" {
				m.restart = why
				m.log.Info("minion idle and changed on disk: stopping to start again", "reason", why)
				return nil
			}
		}
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

// Restart says why Run returned while ctx was live: the program or its
// configuration changed (Config.Changed), and the caller should start
// the new one. It is "" otherwise.
func (m *Minion) Restart() string { return m.restart }

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

// takes says whether the minion takes jobs of kind.
func (m *Minion) takes(kind string) bool {
	return len(m.cfg.Kinds) == 0 || slices.Contains(m.cfg.Kinds, kind)
}

// onlyKinds are the kinds the minion takes, as give-me-job is told them;
// none when it takes both.
func (m *Minion) onlyKinds() []string {
	if m.takes(KindLorry) && m.takes(KindScraper) {
		return nil
	}
	return m.cfg.Kinds
}

func (m *Minion) runJob(ctx context.Context, j *job) {
	log := m.log.With("job_id", j.ID, "path", j.Path)
	log.Info("got job", "kind", j.Kind, "timeout", j.Timeout, "lease", j.Lease)
	out := newOutput(j.OutputLimit)

	if !m.takes(j.Kind) {
		msg := fmt.Sprintf("lorry-controller-minion: this minion does not take %q jobs (--kinds %s)\n", j.Kind, strings.Join(m.cfg.Kinds, ","))
		log.Error("job of a kind this minion does not take", "kind", j.Kind)
		out.add(nil, []byte(msg))
		m.finish(ctx, log, j, exitUnsupported, out)
		return
	}
	if j.Kind == KindScraper {
		m.runScraper(ctx, log, j, out)
		return
	}
	if j.Kind != KindLorry {
		msg := fmt.Sprintf("lorry-controller-minion: cannot run job of kind %q: this minion runs %q and %q jobs\n", j.Kind, KindLorry, KindScraper)
		log.Error("unsupported job kind", "kind", j.Kind)
		out.add(nil, []byte(msg))
		m.finish(ctx, log, j, exitUnsupported, out)
		return
	}

	// The job's files are in the working area, not in /tmp, so that a
	// minion that starts again after a crash finds them (CleanUp).
	mark, err := m.recordJob(j)
	defer m.removeJobFiles(j.ID)
	var spec string
	if err == nil {
		spec, err = m.writeSpec(j)
	}
	if err != nil {
		log.Error("cannot write job files", "err", err)
		out.add(nil, []byte("lorry-controller-minion: "+err.Error()+"\n"))
		m.finish(ctx, log, j, exitNotStarted, out)
		return
	}

	result, err := m.newLorryResult(j)
	if err != nil {
		log.Error("cannot write job files", "err", err)
		out.add(nil, []byte("lorry-controller-minion: "+err.Error()+"\n"))
		m.finish(ctx, log, j, exitNotStarted, out)
		return
	}
	defer result.close()
	args := append([]string{"--working-area", m.cfg.WorkingArea, "--result-fd", strconv.Itoa(resultFD)}, j.lorryFlags()...)
	if m.cfg.GitConfig != "" {
		args = append(args, "--git-config", m.cfg.GitConfig)
	}
	args = append(args, spec)
	env := append(slices.DeleteFunc(m.jobUserEnv(os.Environ()), func(kv string) bool {
		return strings.HasPrefix(kv, wire.EnvPushURL+"=") || strings.HasPrefix(kv, wire.EnvMirrorBaseURLPush+"=")
	}), mark)
	if j.PushURL != "" {
		// The push URL of a downstream over https carries its API token:
		// in lorry's environment, which only its user can read, not on
		// its command line, which every user can.
		env = append(env, wire.EnvPushURL+"="+j.PushURL)
	}
	p, err := proc.Start(proc.Command{Name: m.cfg.LorryCmd, Args: args, Env: env, Dir: m.cfg.WorkingArea, User: m.cfg.JobUser,
		ExtraFiles: []*os.File{result.f}})
	if err != nil {
		log.Error("cannot start lorry", "err", err)
		out.add(nil, []byte("lorry-controller-minion: "+err.Error()+"\n"))
		m.finish(ctx, log, j, exitNotStarted, out)
		return
	}
	m.guard(log, j, p, mark)
	defer m.unguard(log, j)
	if err := m.writeRecord(jobRecord{JobID: j.ID, Path: j.Path, Mark: mark, Pgid: p.Pid()}); err != nil {
		// The first record, with the mark, is enough to find the job.
		log.Warn("cannot record the job's process group", "err", err)
	}
	log.Info("job started", "pid", p.Pid(), "lorry_cmd", m.cfg.LorryCmd)
	if !m.confirm(ctx, log, j, p) {
		return
	}

	if !m.watch(ctx, log, j, p, out) {
		return
	}
	exit := p.Wait()
	if err := p.Err(); err != nil {
		log.Warn("job output may be incomplete", "err", err)
	}
	out.add(p.NewOutput())
	j.head, j.refs, j.errorClass = result.read(log, j, exit)
	m.finish(ctx, log, j, exit, out)
}

// jobUserEnv is env with the home and name of the job's user, when jobs
// run as --job-user: lorry finds the ssh keys and git configuration for
// the git hosts in that user's home, not in the minion's.
func (m *Minion) jobUserEnv(env []string) []string {
	u := m.cfg.JobUser
	if u == nil {
		return env
	}
	env = slices.DeleteFunc(env, func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return k == "HOME" || k == "USER" || k == "LOGNAME"
	})
	return append(env, "HOME="+u.Home, "USER="+u.Name, "LOGNAME="+u.Name)
}

// Bounds of the form body of one job-update. Output is sent in pieces of
// at most maxUpdateBody once form-encoded (a non-ASCII byte takes three),
// well under what the WEBAPP accepts, and a piece the WEBAPP still finds
// too large is halved, down to minUpdateBody.
const (
	maxUpdateBody = 4 << 20
	minUpdateBody = 4 << 10
	// formSpace is room for the fields of an update other than the
	// output.
	formSpace = 1 << 10
)

// guard starts the watchdog of job j, process p, which carries mark. A
// job whose watchdog cannot start runs without one, as the minion's own
// lease timer still ends it while the minion runs.
func (m *Minion) guard(log *slog.Logger, j *job, p *proc.Process, mark string) {
	if m.cfg.Watchdog == "" {
		return
	}
	wd, err := proc.StartWatchdog(p, proc.WatchdogCommand{Program: m.cfg.Watchdog, Mark: mark, User: m.cfg.JobUser,
		Deadline: j.leaseEnd(), Grace: m.killGrace(j)})
	if err != nil {
		log.Error("cannot start the job's watchdog; the job runs without one", "err", err)
		return
	}
	j.watchdog = wd
}

// unguard releases the watchdog of job j, once its processes are gone.
func (m *Minion) unguard(log *slog.Logger, j *job) {
	if j.watchdog == nil {
		return
	}
	if err := j.watchdog.Release(); err != nil {
		log.Warn("job's watchdog", "err", err)
	}
	j.watchdog = nil
}

// killGrace is the smaller of the minion's own grace and the WEBAPP's.
func (m *Minion) killGrace(j *job) time.Duration {
	if j.KillGrace > 0 {
		return min(m.cfg.KillGrace, time.Duration(j.KillGrace)*time.Second)
	}
	return m.cfg.KillGrace
}

// watch sends the output of the running job every update interval, and
// sooner while a backlog is left; it kills the job when the WEBAPP asks,
// when ctx is done, or when the lease runs out without an update having
// reached the WEBAPP. It returns once the child has exited, or false if
// the job is no longer ours to report.
func (m *Minion) watch(ctx context.Context, log *slog.Logger, j *job, p *proc.Process, out *output) bool {
	// The job's processes are gone when it returns: so is the need to
	// watch them, while the end is reported.
	defer m.unguard(log, j)
	w := &watcher{m: m, log: log, j: j, p: p, out: out, bo: m.newBackoff(), budget: maxUpdateBody - formSpace,
		timer: time.NewTimer(m.cfg.UpdateInterval)}
	defer w.timer.Stop()
	// A job given without a lease never runs out of it.
	if end := j.leaseEnd(); !end.IsZero() {
		w.lease = time.NewTimer(time.Until(end))
		defer w.lease.Stop()
		w.leaseC = w.lease.C
	}
	for {
		select {
		case <-p.Done():
			w.exited()
			return true
		case <-ctx.Done():
			w.kill("stopping")
			<-p.Done()
			return true
		case <-w.leaseC:
			w.leaseRanOut()
			continue
		case <-w.timer.C:
		}
		if !w.update(ctx) {
			return false
		}
	}
}

// watcher is what watch keeps of a running job between its events.
type watcher struct {
	m      *Minion
	log    *slog.Logger
	j      *job
	p      *proc.Process
	out    *output
	bo     *backoff
	budget int
	// timer fires when the next update is due; lease when the lease
	// runs out, leaseC being nil once it has, or if there is none.
	timer  *time.Timer
	lease  *time.Timer
	leaseC <-chan time.Time
	killed bool
}

// kill kills the job, once.
func (w *watcher) kill(why string) {
	if w.killed {
		return
	}
	w.killed = true
	grace := w.m.killGrace(w.j)
	w.log.Info(why+": killing job", "pid", w.p.Pid(), "grace", grace)
	w.p.Kill(grace)
}

// exited notes how the job ended when its child has exited.
func (w *watcher) exited() {
	if end := w.j.leaseEnd(); !w.killed && !end.IsZero() && !time.Now().Before(end) {
		// Its watchdog ended it at the lease's end, a moment before the
		// minion's own timer would have: the minion's kill all the same,
		// not a fault of the job.
		w.out.add(w.p.NewOutput())
		w.out.add(nil, fmt.Appendf(nil, "lorry-controller-minion: lease of %ds expired without reaching the WEBAPP: job killed by its watchdog\n", w.j.Lease))
		w.j.stopping = true
	}
}

// leaseRanOut kills the job whose lease ran out without an update having
// reached the WEBAPP.
func (w *watcher) leaseRanOut() {
	// Bistro's rule: give up before the WEBAPP counts the job as a
	// ghost and hands its lorry to another minion.
	w.leaseC = nil
	if w.killed {
		return
	}
	w.out.add(w.p.NewOutput())
	w.out.add(nil, fmt.Appendf(nil, "lorry-controller-minion: lease of %ds expired without reaching the WEBAPP: job killed\n", w.j.Lease))
	w.kill("lease expired without reaching the webapp")
	// Its minion cut it off, not a fault of the job: it is reported as
	// the minion's kill, like a stop's.
	w.j.stopping = true
}

// update sends the output read since the last update that reached the
// WEBAPP, and sets the timer for the next. It returns false if the WEBAPP
// refused it, having killed the job, which is no longer ours to report.
func (w *watcher) update(ctx context.Context) bool {
	w.out.add(w.p.NewOutput())
	u, _ := w.out.next(w.budget, false)
	uctx, cancel := ctx, context.CancelFunc(func() {})
	if end := w.j.leaseEnd(); !end.IsZero() && !w.killed {
		// A request hung on a broken network must not hold the job
		// beyond its lease.
		uctx, cancel = context.WithDeadline(ctx, end)
	}
	kill, err := w.m.jobUpdate(uctx, w.j, updateRunning, u, nil)
	var gap *outputGap
	// Read before cancel, which would make every update look timed out,
	// and a 404 or 409 look like the network.
	timedOut := uctx.Err() != nil
	cancel()
	switch {
	case err == nil:
		w.out.sent(u)
		w.bo.reset()
		if w.leaseC != nil {
			w.lease.Reset(time.Until(w.j.leaseEnd()))
		}
		if kill {
			w.kill("webapp asked to kill job")
		}
		next := w.m.cfg.UpdateInterval
		if w.out.backlog() {
			next = 0
		}
		w.timer.Reset(next)
	case errors.As(err, &gap):
		w.out.rewind(gap.stdout, gap.stderr)
		w.log.Warn("webapp lacks output sent before; sending from what it has", "err", err)
		w.timer.Reset(0)
	case ctx.Err() != nil:
		// The next select sees it.
	case tooLarge(err) && w.budget > minUpdateBody:
		w.budget = max(w.budget/2, minUpdateBody)
		w.log.Warn("webapp found the update too large; sending less at a time", "err", err, "budget", w.budget)
		w.timer.Reset(0)
	case retryable(err) || tooLarge(err) || timedOut:
		wait := w.bo.next()
		w.log.Warn("webapp unreachable; job keeps running", "err", err, "retry_in", wait)
		w.timer.Reset(wait)
	default:
		// 404 or 409: the WEBAPP has ended the job or given it to
		// someone else, so this run is orphaned work. Any other refusal
		// would be repeated forever; the WEBAPP times the job out as a
		// ghost either way.
		w.log.Warn("webapp refused update; killing job", "err", err, "pid", w.p.Pid())
		w.p.Kill(w.m.killGrace(w.j))
		exit := w.p.Wait()
		w.log.Info("job killed", "exit", exit)
		return false
	}
	return true
}
