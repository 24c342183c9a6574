package minion

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"lorrycontroller.dev/lc/proc"
	"lorrycontroller.dev/lc/venv"
	"lorrycontroller.dev/lc/wire"
)

// KindScraper is a job that runs a scraper in its runtime.
const KindScraper = wire.KindScraper

// The variables that tell a scraper about the descriptors it inherits.
const (
	// RuntimeLockFDVar names the descriptor of the runtime's usage lock:
	// the runtime stays in place for as long as it is open.
	RuntimeLockFDVar = "LORRY_CONTROLLER_RUNTIME_LOCK_FD"
	// ConfigFDsVar lists the config files as "FD:NAME FD:NAME".
	ConfigFDsVar = "LORRY_CONTROLLER_CONFIG_FDS"
	// WorkDirLockFDVar names the descriptor of the working directory's
	// lock: lorry-controller-minion gc leaves the directory alone for
	// as long as it is open, even once the minion is gone.
	WorkDirLockFDVar = "LORRY_CONTROLLER_WORKDIR_LOCK_FD"
	// JobIDVar is the WEBAPP's id of the job.
	JobIDVar = "LORRY_CONTROLLER_JOB_ID"
)

// systemPath is the PATH of a scraper after its runtime's bin.
const systemPath = "/usr/local/bin:/usr/bin:/bin"

// LockWorkDir takes this minion's scraper working directory,
// WORKING-AREA/scrapers/NAME, for as long as the minion lives, and empties
// it. It fails, wrapping flock.ErrLocked, while another process holds it:
// a minion of the same name, or what is left of a job of an earlier run
// of this one. Call it after LockName and CleanUp, before the first job;
// a scraper job takes it otherwise.
func (m *Minion) LockWorkDir() (*venv.WorkDir, error) {
	if m.workDir != nil {
		return m.workDir, nil
	}
	w, err := venv.LockWorkDir(m.cfg.WorkingArea, m.cfg.Name, m.cfg.JobUser)
	if err != nil {
		return nil, err
	}
	m.workDir = w
	return w, nil
}

// runScraper runs job j of kind scraper: it gets the job's runtime ready,
// building it if no minion on this machine has, and runs the scraper in
// this minion's working directory, with a clean environment, the
// runtime's usage lock, its config files and the working directory's lock
// as inherited descriptors.
func (m *Minion) runScraper(ctx context.Context, log *slog.Logger, j *job, out *output) {
	fail := func(exit int, err error) {
		log.Error("scraper not run", "err", err)
		out.add(nil, []byte("lorry-controller-minion: "+err.Error()+"\n"))
		m.finish(ctx, log, j, exit, out)
	}
	sc := j.Scraper
	if err := m.cannotRunScraper(sc); err != nil {
		fail(exitUnsupported, err)
		return
	}
	wd, err := m.LockWorkDir()
	if err != nil {
		fail(exitNotStarted, err)
		return
	}
	cwd, home := filepath.Join(wd.Path, "cwd"), filepath.Join(wd.Path, "home")
	j.duDir = cwd

	// As for lorry, the record is on disk before anything of the job
	// runs, so that a minion that starts again after a crash finds the
	// job's processes.
	mark, err := m.recordJob(j)
	defer m.removeJobFiles(j.ID)
	if err != nil {
		fail(exitNotStarted, fmt.Errorf("write job files: %w", err))
		return
	}

	env, ok := m.acquireRuntime(ctx, log, j, out)
	if !ok {
		return
	}
	defer releaseRuntime(log, env)

	if err := emptyDirs(m.cfg.JobUser, cwd, home); err != nil {
		fail(exitNotStarted, fmt.Errorf("scraper working directory: %w", err))
		return
	}

	// ExtraFiles become descriptors 3, 4, ... in the order given: the
	// usage lock first, then one pipe per config file, then the working
	// directory's lock, last so that the config files keep their
	// numbers.
	files := []*os.File{env.LockFile()}
	lockFD := 3
	pipes, err := openConfigPipes(sc.Config, 3+len(files))
	if err != nil {
		fail(exitNotStarted, err)
		return
	}
	defer pipes.closeWriters()
	defer pipes.closeReaders()
	files = append(files, pipes.readers...)

	workDirFD := 3 + len(files)
	files = append(files, wd.File())

	argv, err := scraperArgv(sc, pipes.byName, lockFD, pipes.fdList)
	if err != nil {
		fail(exitUnsupported, err)
		return
	}
	jobEnv := m.scraperEnv(j, env.Dir, home, mark, jobFDs{runtimeLock: lockFD, workDirLock: workDirFD, config: pipes.fdList})
	prog, err := lookProgram(argv[0], pathOf(jobEnv))
	if err != nil {
		fail(exitNotStarted, err)
		return
	}

	p, err := proc.Start(proc.Command{Name: prog, Args: argv[1:], Env: jobEnv, Dir: cwd, ExtraFiles: files, User: m.cfg.JobUser})
	if err != nil {
		fail(exitNotStarted, err)
		return
	}
	// The job has its own copies; the pipes' read ends must be the
	// job's alone, so that a writer meets a broken pipe once the job
	// is gone rather than waiting for a reader that never comes.
	pipes.closeReaders()
	for i, c := range sc.Config {
		go feed(pipes.writers[i], c.Content)
	}
	m.guard(log, j, p, mark)
	defer m.unguard(log, j)
	if err := m.writeRecord(jobRecord{JobID: j.ID, Path: j.Path, Mark: mark, Pgid: p.Pid()}); err != nil {
		log.Warn("cannot record the job's process group", "err", err)
	}
	log.Info("scraper started", "pid", p.Pid(), "argv", argv, "runtime", env.Runtime.Name, "runtime_id", env.Runtime.ID)

	if !m.watch(ctx, log, j, p, out) {
		return
	}
	exit := p.Wait()
	if err := p.Err(); err != nil {
		log.Warn("job output may be incomplete", "err", err)
	}
	out.add(p.NewOutput())
	m.finish(ctx, log, j, exit, out)
}

// releaseRuntime gives back the runtime a job used.
func releaseRuntime(log *slog.Logger, env *venv.Env) {
	if err := env.Release(); err != nil {
		log.Warn("cannot release runtime", "err", err)
	}
}

// cannotRunScraper says why this minion cannot run scraper sc, nil if it
// can.
func (m *Minion) cannotRunScraper(sc *wire.Scraper) error {
	if sc == nil || len(sc.Argv) == 0 {
		return errors.New("the WEBAPP sent a scraper job without its scraper")
	}
	if m.cfg.Runtimes == nil {
		return errors.New("this minion has no runtime cache and cannot run scrapers")
	}
	return nil
}

// configPipes are the pipes a scraper reads its config files from, one
// per file: the read ends become the job's descriptors, and the minion
// feeds the write ends once the job has started.
type configPipes struct {
	readers, writers []*os.File
	// byName is each file's descriptor, and fdList lists them as
	// "FD:NAME".
	byName map[string]int
	fdList []string
}

// openConfigPipes opens a pipe for each of config, whose read ends will
// be the job's descriptors firstFD, firstFD+1, ...
func openConfigPipes(config []wire.ConfigFile, firstFD int) (*configPipes, error) {
	p := &configPipes{byName: map[string]int{}}
	for _, c := range config {
		r, w, err := os.Pipe()
		if err != nil {
			p.closeReaders()
			p.closeWriters()
			return nil, fmt.Errorf("config %s: %w", c.Name, err)
		}
		p.readers, p.writers = append(p.readers, r), append(p.writers, w)
		fd := firstFD + len(p.readers) - 1
		p.byName[c.Name] = fd
		p.fdList = append(p.fdList, strconv.Itoa(fd)+":"+c.Name)
	}
	return p, nil
}

// closeReaders closes the read ends, once the job has its own copies.
func (p *configPipes) closeReaders() {
	for _, r := range p.readers {
		r.Close()
	}
	p.readers = nil
}

func (p *configPipes) closeWriters() {
	for _, w := range p.writers {
		w.Close()
	}
}

// feed writes a config file into the pipe the job reads it from. It ends
// when the content is written, or when the pipe is closed: by the job
// ending (a broken pipe) or by runScraper closing the write end once the
// job has ended, so that a job that never read its config leaves no
// goroutine behind.
func feed(w *os.File, content []byte) {
	w.Write(content)
	w.Close()
}

// acquireRuntime gets the job's runtime ready, building it if need be.
// While it builds, or waits for another minion's build, the job is kept
// alive with updates, and a kill from the WEBAPP stops the wait. A build
// that fails ends the job with pip's output; ok is false then.
func (m *Minion) acquireRuntime(ctx context.Context, log *slog.Logger, j *job, out *output) (*venv.Env, bool) {
	sc := j.Scraper
	rt := venv.Runtime{Name: sc.Runtime.Name, Version: sc.Runtime.Version, ID: sc.Runtime.ID, Python: sc.Runtime.Python}
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		env *venv.Env
		err error
	}
	done := make(chan result, 1)
	go func() {
		env, err := m.cfg.Runtimes.Acquire(actx, rt, m.fetchRuntime)
		done <- result{env, err}
	}()

	var res result
	timer := time.NewTimer(m.cfg.UpdateInterval)
	defer timer.Stop()
	bo := m.newBackoff()
wait:
	for {
		select {
		case res = <-done:
			break wait
		case <-timer.C:
		}
		kill, err := m.jobUpdate(actx, j, updateRunning, update{}, nil)
		switch {
		case err == nil && kill:
			log.Info("webapp asked to kill job while its runtime was made ready")
			cancel()
		case err == nil:
			bo.reset()
			timer.Reset(m.cfg.UpdateInterval)
		case retryable(err) || actx.Err() != nil:
			timer.Reset(bo.next())
		default:
			log.Warn("webapp refused update; giving up the job", "err", err)
			cancel()
			if r := <-done; r.env != nil {
				r.env.Release()
			}
			return nil, false
		}
	}
	if res.err != nil {
		exit := exitUnsupported
		if actx.Err() != nil {
			exit = 128 + 15
		}
		log.Error("runtime not ready", "err", res.err)
		out.add(nil, []byte("lorry-controller-minion: "+res.err.Error()+"\n"))
		m.finish(ctx, log, j, exit, out)
		return nil, false
	}
	j.runtime = &runtimeReport{built: res.env.Built, seconds: res.env.BuildTime.Seconds()}
	log.Info("runtime ready", "runtime", rt.Name, "runtime_id", rt.ID, "built", res.env.Built,
		"build_seconds", res.env.BuildTime.Seconds())
	return res.env, true
}

// runtimeReport is how the job's runtime was made ready.
type runtimeReport struct {
	built   bool
	seconds float64
}

var configRef = regexp.MustCompile(`\{config:([^}]*)\}`)

// scraperArgv is the command line of the scraper: each {config:NAME}
// becomes the path of the descriptor of that config file, and with fd_args
// the descriptors are named in arguments too.
func scraperArgv(sc *wire.Scraper, byName map[string]int, lockFD int, fdList []string) ([]string, error) {
	var bad []string
	argv := make([]string, 0, len(sc.Argv)+2+2*len(fdList))
	for _, a := range sc.Argv {
		argv = append(argv, configRef.ReplaceAllStringFunc(a, func(ref string) string {
			name := configRef.FindStringSubmatch(ref)[1]
			fd, ok := byName[name]
			if !ok {
				bad = append(bad, name)
				return ref
			}
			return "/dev/fd/" + strconv.Itoa(fd)
		}))
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("argv names config files the scraper is not given: %s", strings.Join(bad, ", "))
	}
	if sc.FDArgs {
		argv = append(argv, "--lock-fd", strconv.Itoa(lockFD))
		for _, f := range fdList {
			argv = append(argv, "--config-from-fd", f)
		}
	}
	return argv, nil
}

// jobFDs are the descriptors a scraper inherits.
type jobFDs struct {
	runtimeLock int
	workDirLock int
	config      []string // "FD:NAME"
}

// scraperEnv is the whole environment of a scraper: nothing of the
// minion's leaks into it but TZ and the --job-env variables, so that a
// scraper runs the same under any minion.
func (m *Minion) scraperEnv(j *job, envDir, home, mark string, fds jobFDs) []string {
	vars := map[string]string{}
	for k, v := range j.Scraper.Env {
		vars[k] = v
	}
	for _, k := range append([]string{"TZ"}, m.cfg.JobEnv...) {
		if v, ok := os.LookupEnv(k); ok {
			vars[k] = v
		}
	}
	// The minion's own come last: a spec cannot move the job's
	// descriptors, its mark or its environment.
	markName, markValue, _ := strings.Cut(mark, "=")
	for k, v := range map[string]string{
		"PATH":           filepath.Join(envDir, "bin") + ":" + systemPath,
		"HOME":           home,
		"LANG":           "C.UTF-8",
		"VIRTUAL_ENV":    envDir,
		JobIDVar:         strconv.FormatInt(j.ID, 10),
		RuntimeLockFDVar: strconv.Itoa(fds.runtimeLock),
		WorkDirLockFDVar: strconv.Itoa(fds.workDirLock),
		ConfigFDsVar:     strings.Join(fds.config, " "),
		markName:         markValue,
	} {
		vars[k] = v
	}
	env := make([]string, 0, len(vars))
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	slices.Sort(env)
	return env
}

func pathOf(env []string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			return v
		}
	}
	return ""
}

// lookProgram finds the scraper's first word in path, the job's PATH
// whose first directory is the runtime's bin: "python" is the runtime's.
// exec would look in the minion's PATH instead.
func lookProgram(name, path string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	for _, dir := range filepath.SplitList(path) {
		p := filepath.Join(dir, name)
		if info, err := os.Stat(p); err == nil && info.Mode().IsRegular() && info.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("start %s: not found in the runtime's bin or in %s", name, systemPath)
}

// emptyDirs empties each of dirs with emptyDir.
func emptyDirs(u *proc.User, dirs ...string) error {
	for _, d := range dirs {
		if err := emptyDir(d, u); err != nil {
			return err
		}
	}
	return nil
}

// emptyDir makes dir an empty directory of the job's user u (nil for the
// minion's own).
func emptyDir(dir string, u *proc.User) error {
	if err := u.RemoveAll(dir); err != nil {
		return err
	}
	return u.Do(func() error { return os.MkdirAll(dir, 0o755) })
}
