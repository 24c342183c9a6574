// Command lorry-controller-minion runs the jobs a Lorry Controller WEBAPP
// hands out, one at a time, reporting their output and how they ended.
//
// It stops on SIGTERM or SIGINT, killing and reporting the job it runs; a
// second signal ends it at once, and the job dies with it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"lorrycontroller.dev/lc/flagconf"
	"lorrycontroller.dev/lc/flock"
	"lorrycontroller.dev/lc/journallog"
	"lorrycontroller.dev/lc/minion"
	"lorrycontroller.dev/lc/minionname"
	"lorrycontroller.dev/lc/proc"
	"lorrycontroller.dev/lc/secretfile"
	"lorrycontroller.dev/lc/venv"
)

// Config is the minion's configuration, from flags and the --config file.
type Config struct {
	WebappURLs     []string
	Name           string
	Sleep          time.Duration
	UpdateInterval time.Duration
	KillGrace      time.Duration
	LorryCmd       string
	WorkingArea    string
	Once           bool
	RuntimeCache   string
	PipArgs        []string
	KeepUnused     time.Duration
	TokenFile      string
	JobUser        string
	JobEnv         []string
	GitConfig      string
	ConfigFile     string
	LogLevel       string

	Queues       string // --queues, sent with give-me-job
	IgnoreQueues string // --ignore-queues, sent with give-me-job
	Kinds        string // --kinds: lorry, scraper or both, comma-separated
}

// httpTimeout bounds each request to the WEBAPP, so that a hung connection
// counts as the WEBAPP being unreachable rather than stalling the job's
// updates for good. flagconf.OriginalMinion says so of webapp-timeout.
const httpTimeout = 30 * time.Second

func main() {
	// Before anything runs: a job must see none of the descriptors the
	// minion inherited.
	if err := proc.KeepInheritedFromChildren(); err != nil {
		fmt.Fprintln(os.Stderr, "lorry-controller-minion:", err)
		os.Exit(1)
	}
	if len(os.Args) > 1 && os.Args[1] == proc.WatchdogArg {
		// Each job's watchdog: the minion started it (proc.StartWatchdog).
		os.Exit(proc.WatchdogMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "gc" {
		os.Exit(gcMain(os.Args[2:], os.Stdout, os.Stderr))
	}
	cfg, err := parseArgs(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "lorry-controller-minion:", err)
		os.Exit(2)
	}
	level, _ := journallog.ParseLevel(cfg.LogLevel) // checked by parseArgs
	log := journallog.New(level).With("minion", cfg.Name)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-ctx.Done()
		stop()
	}()
	err = run(ctx, cfg, log)
	if errors.Is(err, minion.ErrRetired) {
		// A status of its own, which the systemd unit does not restart.
		log.Info("retired: exiting", "exit", minion.ExitRetired)
		os.Exit(minion.ExitRetired)
	}
	if err != nil {
		log.Error("minion failed", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg Config, log *slog.Logger) error {
	jobUser, err := lookupJobUser(cfg.JobUser)
	if err != nil {
		return err
	}
	if cfg.GitConfig != "" {
		// Without it, every git of every job would fail.
		if _, err := os.Stat(cfg.GitConfig); err != nil {
			return fmt.Errorf("--git-config: %w", err)
		}
	}
	if err := os.MkdirAll(cfg.WorkingArea, 0o755); err != nil {
		return fmt.Errorf("create working area: %w", err)
	}
	// lorry, run as the job's user, keeps its mirrors and their locks
	// in the working area.
	if err := jobUser.ShareDir(cfg.WorkingArea); err != nil {
		return fmt.Errorf("--job-user: %w", err)
	}
	host, err := os.Hostname()
	if err != nil {
		return fmt.Errorf("host name: %w", err)
	}
	token, err := readToken(cfg.TokenFile, log)
	if err != nil {
		return err
	}
	if _, err := exec.LookPath(cfg.LorryCmd); err != nil {
		// Not fatal: it may be installed later, and each job reports it.
		log.Warn("lorry command not found; jobs will fail until it is installed", "lorry_cmd", cfg.LorryCmd, "err", err)
	}

	self, err := watchSelf(cfg.ConfigFile)
	if err != nil {
		return err
	}
	runtimes, err := venv.New(venv.Config{Dir: cfg.RuntimeCache, PipArgs: cfg.PipArgs, Logger: log, User: jobUser})
	if err != nil {
		return err
	}

	m := minion.New(minionConfig(cfg, host, token, jobUser, runtimes, self.changed), &http.Client{Timeout: httpTimeout}, log)

	// Taken for the minion's lifetime, before anything else: a second
	// minion of the same name must not clean up the first one's job.
	name, err := lockName(m, cfg.Name)
	if err != nil {
		return err
	}
	defer name.Close()

	// Before asking for work: the WEBAPP ends the job of an earlier run
	// as lost, saying its processes were killed. A scraper among them
	// held the working directory, which is free once they are gone.
	if err := m.CleanUp(ctx); err != nil {
		return err
	}
	wd, err := m.LockWorkDir()
	if errors.Is(err, flock.ErrLocked) {
		return fmt.Errorf("%w: a process of an earlier job of this minion that carries no job mark still holds it", err)
	}
	if err != nil {
		return err
	}
	defer wd.Close()
	log.Info("minion started", "webapp_url", strings.Join(cfg.WebappURLs, ","), "lorry_cmd", cfg.LorryCmd, "working_area", cfg.WorkingArea,
		"queues", cfg.Queues, "ignore_queues", cfg.IgnoreQueues, "job_user", cfg.JobUser, "kinds", cfg.Kinds)
	defer log.Info("minion stopped")
	if cfg.Once {
		ran, err := m.RunOnce(ctx)
		if errors.Is(err, minion.ErrRetired) || err != nil && ctx.Err() == nil {
			return err
		}
		if !ran {
			log.Info("nothing to do")
		}
		return nil
	}
	err = m.Run(ctx)
	if why := m.Restart(); why != "" && ctx.Err() == nil && err == nil {
		// A deploy replaced the binary or the
		// configuration; the new one takes over between jobs.
		log.Info("minion starting again", "reason", why, "exe", self.exe)
		wd.Close()
		name.Close()
		if err := self.reexec(); err != nil {
			return fmt.Errorf("start again as %s: %w", self.exe, err)
		}
	}
	return err
}

// readToken is the token in file, "" if file is "".
func readToken(file string, log *slog.Logger) (string, error) {
	if file == "" {
		return "", nil
	}
	token, warning, err := secretfile.Read(file)
	if err != nil {
		return "", fmt.Errorf("--token-file: %w", err)
	}
	if warning != "" {
		log.Warn("secret file open to others", "warning", warning)
	}
	return token, nil
}

// minionConfig is the minion's configuration from the command line's,
// for this process on host; changed says when its binary or
// configuration was replaced.
func minionConfig(cfg Config, host, token string, jobUser *proc.User, runtimes *venv.Cache, changed func() string) minion.Config {
	return minion.Config{
		WebappURLs:     cfg.WebappURLs,
		Name:           cfg.Name,
		Host:           host,
		Pid:            os.Getpid(),
		LorryCmd:       cfg.LorryCmd,
		WorkingArea:    cfg.WorkingArea,
		Sleep:          cfg.Sleep,
		UpdateInterval: cfg.UpdateInterval,
		KillGrace:      cfg.KillGrace,
		Token:          token,
		Queues:         cfg.Queues,
		IgnoreQueues:   cfg.IgnoreQueues,
		Kinds:          kindList(cfg.Kinds),
		Runtimes:       runtimes,
		JobEnv:         cfg.JobEnv,
		JobUser:        jobUser,
		GitConfig:      cfg.GitConfig,
		Changed:        changed,
		// The binary as it started: a deploy that replaces it between
		// jobs does not change the watchdog of a job it runs.
		Watchdog: "/proc/self/exe",
	}
}

// parseArgs reads the command line and the --config file it names, if any;
// the command line wins over the file.
func parseArgs(args []string, out io.Writer) (Config, error) {
	var cfg Config
	fs := flag.NewFlagSet("lorry-controller-minion", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: lorry-controller-minion [flags]
       lorry-controller-minion gc [flags]

Asks the Lorry Controller WEBAPP for jobs and runs them one at a time.
With gc, removes the scrapers' runtimes and working directories that no
job uses (--runtime-cache, --keep-unused, --working-area) and exits.
Durations are written like 10s, 1m30s.

Flags:
`)
		fs.PrintDefaults()
	}
	cfg.WebappURLs = []string{"http://127.0.0.1:12765"}
	fs.Var(&urlList{urls: &cfg.WebappURLs}, "webapp-url", "base `URL` of the WEBAPP; several WEBAPPs that share one state database, repeated or comma-separated: the minion asks one, and the next when it does not answer")
	fs.StringVar(&cfg.Name, "name", defaultName(), "stable `name` of this minion, e.g. HOST-N for systemd instance N")
	fs.DurationVar(&cfg.Sleep, "sleep", 10*time.Second, "wait this long after the WEBAPP had nothing to do")
	fs.DurationVar(&cfg.UpdateInterval, "update-interval", 5*time.Second, "send a job's output this often")
	fs.DurationVar(&cfg.KillGrace, "kill-grace", 10*time.Second, "when killing a job, wait this long after SIGTERM before SIGKILL (or the WEBAPP's kill_grace, if shorter)")
	fs.StringVar(&cfg.LorryCmd, "lorry-cmd", defaultLorryCmd(), "lorry `program` to run for each job")
	fs.StringVar(&cfg.WorkingArea, "working-area", "/var/lib/lorry-controller/work", "`directory` for lorry's working state, created if missing")
	fs.StringVar(&cfg.ConfigFile, "config", "", "read settings from `file`: key = value lines, keys named like the flags; when it or the minion's executable changes, the minion starts again once idle")
	fs.BoolVar(&cfg.Once, "once", false, "ask for one job, run it if there is one, then exit")
	fs.StringVar(&cfg.RuntimeCache, "runtime-cache", "", "`directory` of the scrapers' runtimes (default: runtimes in --working-area)")
	fs.Var((*stringList)(&cfg.PipArgs), "pip-arg", "pass `arg` to pip install when building a runtime; repeat for more")
	fs.DurationVar(&cfg.KeepUnused, "keep-unused", 72*time.Hour, "gc removes even the newest runtime of a scraper when unused this long")
	fs.StringVar(&cfg.TokenFile, "token-file", "", "`file` of the minion token to send the WEBAPP (lorry-controller-webapp token create --role minion); its name must be --name, or the start of it before a \"-\"")
	fs.StringVar(&cfg.Queues, "queues", "", "take jobs only from these `queues`, comma-separated (wins over --ignore-queues)")
	fs.StringVar(&cfg.IgnoreQueues, "ignore-queues", "", "take no jobs from these `queues`, comma-separated")
	fs.StringVar(&cfg.Kinds, "kinds", "lorry,scraper", "take only jobs of these `kinds`, comma-separated: lorry, scraper or both (keep scrapers off the machines that hold downstream credentials)")
	fs.StringVar(&cfg.LogLevel, "log-level", "info", "log `level`: "+journallog.LevelNames)
	fs.StringVar(&cfg.JobUser, "job-user", "", "run jobs (lorry, scrapers, runtime builds) as `user` and its group, so that they cannot read the minion's token and locks; needs CAP_SETUID, CAP_SETGID and CAP_KILL, and the minion's user in that user's group")
	fs.StringVar(&cfg.GitConfig, "git-config", "", "the `file` of git configuration that lorry's git reads (URL rewrites, certificates, ssh, safe.directory), instead of .gitconfig in the home of the user that jobs run as")
	fs.Var((*stringList)(&cfg.JobEnv), "job-env", "pass the minion's environment variable `name` on to scrapers, which see no other but TZ; repeat for more")
	warnings, err := flagconf.ParseOriginal(fs, args, "config", flagconf.OriginalMinion)
	for _, w := range warnings {
		fmt.Fprintln(out, "lorry-controller-minion: warning:", w)
	}
	if err != nil {
		return cfg, err
	}
	if cfg.RuntimeCache == "" {
		cfg.RuntimeCache = filepath.Join(cfg.WorkingArea, "runtimes")
	}
	return cfg, validate(cfg)
}

func validate(cfg Config) error {
	if err := checkWebappURLs(cfg.WebappURLs); err != nil {
		return err
	}
	for _, s := range []struct {
		flag, value string
	}{{"name", cfg.Name}, {"lorry-cmd", cfg.LorryCmd}, {"working-area", cfg.WorkingArea}} {
		if s.value == "" {
			return fmt.Errorf("--%s must not be empty", s.flag)
		}
	}
	if err := minionname.Check(cfg.Name); err != nil {
		return fmt.Errorf("--name: %w", err)
	}
	if len(kindList(cfg.Kinds)) == 0 {
		return fmt.Errorf("--kinds %q: want lorry, scraper or both", cfg.Kinds)
	}
	for _, k := range strings.Split(cfg.Kinds, ",") {
		if k = strings.TrimSpace(k); k != minion.KindLorry && k != minion.KindScraper {
			return fmt.Errorf("--kinds %q: %q is neither lorry nor scraper", cfg.Kinds, k)
		}
	}
	for _, d := range []struct {
		flag  string
		value time.Duration
	}{{"sleep", cfg.Sleep}, {"update-interval", cfg.UpdateInterval}} {
		if d.value <= 0 {
			return fmt.Errorf("--%s %v: want a positive duration", d.flag, d.value)
		}
	}
	if cfg.KillGrace < 0 {
		return fmt.Errorf("--kill-grace %v: want a duration of zero or more", cfg.KillGrace)
	}
	if cfg.KeepUnused < 0 {
		return fmt.Errorf("--keep-unused %v: want a duration of zero or more", cfg.KeepUnused)
	}
	if _, err := journallog.ParseLevel(cfg.LogLevel); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	return nil
}

// defaultName is unique among the minions of a host while they run; systemd
// units should pass a stable --name instead, so that a restarted minion is
// recognised.
// kindList is --kinds as a list.
func kindList(s string) []string {
	var out []string
	for _, k := range strings.Split(s, ",") {
		if k = strings.TrimSpace(k); k != "" && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

func defaultName() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return host + "-" + strconv.Itoa(os.Getpid())
}

// defaultLorryCmd prefers the lorry installed beside the minion, so that an
// installation uses its own lorry whatever PATH says.
func defaultLorryCmd() string {
	exe, err := os.Executable()
	if err == nil {
		p := filepath.Join(filepath.Dir(exe), "lorry")
		if info, err := os.Stat(p); err == nil && info.Mode().IsRegular() && info.Mode()&0o111 != 0 {
			return p
		}
	}
	return "lorry"
}

// inGroup checks that this process is in group gid, the job user's: the
// minion gives the working area and the files it hands a job that group,
// which a user outside it may not do. Root may.
func inGroup(gid uint32) error {
	if os.Geteuid() == 0 || uint32(os.Getegid()) == gid {
		return nil
	}
	groups, err := os.Getgroups()
	if err != nil {
		return fmt.Errorf("the minion's groups: %w", err)
	}
	for _, g := range groups {
		if uint32(g) == gid {
			return nil
		}
	}
	name := strconv.FormatUint(uint64(gid), 10)
	if g, err := user.LookupGroupId(name); err == nil {
		name = g.Name
	}
	return fmt.Errorf("the minion's user is not in the group %s, through which it shares the working area with the jobs", name)
}

// lookupJobUser is the --job-user, or nil without one. Taking it on
// checks that the minion may act as it: a minion without CAP_SETUID and
// CAP_SETGID had better say so at its start than fail every job.
func lookupJobUser(name string) (*proc.User, error) {
	if name == "" {
		return nil, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("--job-user: %w", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("--job-user %s: %w", name, err)
	}
	if uid == 0 {
		return nil, fmt.Errorf("--job-user %s: jobs must not run as root", name)
	}
	if int(uid) == os.Getuid() {
		return nil, fmt.Errorf("--job-user %s: that is the minion's own user; jobs would read its token", name)
	}
	if err := inGroup(uint32(gid)); err != nil {
		return nil, fmt.Errorf("--job-user %s: %w", name, err)
	}
	ju := &proc.User{Name: name, UID: uint32(uid), GID: uint32(gid), Home: u.HomeDir}
	if err := ju.Do(func() error { return nil }); err != nil {
		return nil, fmt.Errorf("--job-user: %w", err)
	}
	return ju, nil
}
