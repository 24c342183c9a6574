// Command lorry-controller-webapp is the WEBAPP: it owns the state
// database, reads CONFGIT, holds the run queue, and serves the /1.0 API
// that admins and minions use.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"lorrycontroller.dev/lc/atomicfile"
	"lorrycontroller.dev/lc/clock"
	"lorrycontroller.dev/lc/confgit"
	"lorrycontroller.dev/lc/control"
	"lorrycontroller.dev/lc/flagconf"
	"lorrycontroller.dev/lc/flock"
	"lorrycontroller.dev/lc/hosts/downstream"
	"lorrycontroller.dev/lc/hosts/upstream"
	"lorrycontroller.dev/lc/journallog"
	"lorrycontroller.dev/lc/netlimit"
	"lorrycontroller.dev/lc/routes"
	"lorrycontroller.dev/lc/statedb"
	"lorrycontroller.dev/lc/systemd"
	"lorrycontroller.dev/lc/webhook"
)

// Config is everything the WEBAPP is told on its command line or in its
// configuration file.
type Config struct {
	StateDB       string
	ConfigDir     string
	ConfgitURL    string
	ConfgitBranch string
	Listen        string
	AddrFile      string
	StatusHTML    string
	GhostTimeout  time.Duration
	Lease         time.Duration
	KillGrace     time.Duration
	ClaimTimeout  time.Duration
	JobMaxAge     time.Duration
	OutputLimit   int64
	DebugFakeTime bool
	// DebugPprofListen is where Go's profiles are served, "" for nowhere.
	DebugPprofListen string
	LogLevel         string
	Downstream       downstream.Config
	ShutdownGrace    time.Duration
	PeriodicWork     bool
	// ConfigFile is the --config file, "" for none.
	ConfigFile string
	// InsecureNoAuth, ReadAccess and MetricsAccess say who must show a
	// token; see routes.Server.
	InsecureNoAuth bool
	ReadAccess     string
	MetricsAccess  string
	// AdminTokenFile is for the call subcommand, which reads this
	// configuration too; the WEBAPP only checks who may read it.
	AdminTokenFile string
	// AllowLocalSources lets specs mirror files of the minions' machines.
	AllowLocalSources bool
	// NotifyURL is where notifications are posted, "" for nowhere;
	// NotifySecretFile holds the secret they are signed with, and
	// NotifyEvents the events to notify of (NotifyEventList parsed).
	NotifyURL        string
	NotifySecretFile string
	NotifyEventList  string
	NotifyEvents     map[string]bool
	// HookSecretFile holds the secret of the forges' push hooks; "" for
	// no push hooks.
	HookSecretFile string
	// PublicURL is where browsers and notification receivers reach the
	// WEBAPP, "" when not said; see checkPublicURL.
	PublicURL string
	// BackupDirectory is where POST /1.0/backup writes, "" for nowhere.
	BackupDirectory string

	// IdleTimeout, BodyReadTimeout, BodyMinRate and MaxConnections bound
	// what clients hold of the WEBAPP; see docs/operations.md.
	IdleTimeout     time.Duration
	BodyReadTimeout time.Duration
	BodyMinRate     int64
	MaxConnections  int
	// StateDBPasswordFile holds the password of a PostgreSQL STATEDB.
	StateDBPasswordFile string
	// BackupStateDB is the address at which pg_dump reaches a
	// PostgreSQL STATEDB on its server itself, when StateDB goes
	// through a pooler; "" for StateDB (statedb's DumpAddress).
	BackupStateDB string
	// ReplicaName, ReplicaURL and ReplicaLease say how this WEBAPP is
	// known to the others sharing its STATEDB, and the term of the
	// leases of the work one of them at a time does; ReplicaForget how
	// long one not heard from stays listed.
	ReplicaName   string
	ReplicaURL    string
	ReplicaLease  time.Duration
	ReplicaForget time.Duration
	// Warnings are about the configuration file, for the log.
	Warnings []string
}

func parseFlags(args []string, stderr io.Writer) (Config, error) {
	var c Config
	fs := flag.NewFlagSet("lorry-controller-webapp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: lorry-controller-webapp [flags]\n"+
			"       lorry-controller-webapp call [flags] METHOD PATH [key=value...]\n"+
			"       lorry-controller-webapp token create|list|revoke [flags]\n"+
			"       lorry-controller-webapp check-config [flags] [DIR | --git-dir DIR --rev REV]\n"+
			"       lorry-controller-webapp backup [flags] FILE\n"+
			"       lorry-controller-webapp migrate-statedb --from PATH --to postgres://... [flags]\n\n"+
			"Serve the Lorry Controller /1.0 API and status page.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	fs.StringVar(&c.StateDB, "statedb", "lorry-controller.db", "`path` of the state database (SQLite), or the postgres:// URL of a PostgreSQL database, without its password")
	fs.StringVar(&c.StateDBPasswordFile, "statedb-password-file", "", "`file` of the PostgreSQL STATEDB's password (else libpq's PGPASSFILE or ~/.pgpass)")
	fs.StringVar(&c.BackupStateDB, "backup-statedb", "", "postgres:// `url` of the PostgreSQL STATEDB on its server itself, without its password, for pg_dump when --statedb goes through a pooler such as pgbouncer; empty: --statedb")
	fs.StringVar(&c.ReplicaName, "replica-name", "", "`name` of this WEBAPP among those sharing the STATEDB, on the status page; empty: the host's name and the listening port")
	fs.StringVar(&c.ReplicaURL, "replica-url", "", "`url` at which the other WEBAPPs and browsers reach this one; empty: http:// and the listening address")
	fs.DurationVar(&c.ReplicaLease, "replica-lease", control.DefaultLeaseTerm, "term of the leases of the work one WEBAPP at a time does (listings, ticks, reading CONFGIT), renewed every third of it")
	fs.DurationVar(&c.ReplicaForget, "replica-forget", control.DefaultReplicaForget, "forget a WEBAPP sharing the STATEDB not seen for this `duration`; one not seen for two --replica-lease is listed as down until then")
	fs.StringVar(&c.ConfigDir, "configuration-directory", "confgit", "`dir`ectory of the local CONFGIT clone")
	fs.StringVar(&c.ConfgitURL, "confgit-url", "", "`url` of CONFGIT to clone and fetch; empty: use the repository already in --configuration-directory")
	fs.StringVar(&c.ConfgitBranch, "confgit-branch", "master", "CONFGIT `branch` to read (falls back to the remote's HEAD if it does not exist)")
	fs.StringVar(&c.Listen, "listen", "127.0.0.1:12765", "`address` to listen on (\":0\" picks a free port)")
	fs.StringVar(&c.AddrFile, "addr-file", "", "write the bound address to this `file` once listening")
	fs.StringVar(&c.StatusHTML, "status-html", "", "`path` of the on-disk status page that status-html rewrites")
	fs.DurationVar(&c.GhostTimeout, "ghost-timeout", 15*time.Minute, "end running jobs with no update for this `duration` (remove-ghost-jobs)")
	fs.DurationVar(&c.Lease, "lease", 0, "a minion kills its job after this `duration` without delivering an update; 0: half of --ghost-timeout")
	fs.DurationVar(&c.KillGrace, "kill-grace", control.DefaultKillGrace, "longest `duration` a minion waits between SIGTERM and SIGKILL when killing a job")
	fs.DurationVar(&c.ClaimTimeout, "claim-timeout", control.DefaultClaimTimeout, "end as orphaned a job handed out whose minion has not confirmed starting it within this `duration`")
	fs.DurationVar(&c.JobMaxAge, "job-max-age", 30*24*time.Hour, "default age beyond which remove-old-jobs forgets finished jobs")
	fs.Int64Var(&c.OutputLimit, "job-output-limit", statedb.DefaultOutputLimit, "`bytes` of output kept per job (head and tail)")
	fs.BoolVar(&c.DebugFakeTime, "debug-fake-time", false, "use a fake clock that starts at 0 and moves only by POST /1.0/pretend-time")
	registerDebugFlags(fs, &c)
	c.Downstream.RegisterFlags(fs)
	fs.StringVar(&c.LogLevel, "log-level", "info", "log `level`: "+journallog.LevelNames)
	fs.DurationVar(&c.ShutdownGrace, "shutdown-grace", 10*time.Second, "how long to let requests finish on shutdown")
	fs.BoolVar(&c.AllowLocalSources, "allow-local-sources", false, "let specs mirror paths and file: URLs of the minions' machines (lorry refuses them otherwise)")
	fs.BoolVar(&c.PeriodicWork, "periodic-work", false, "do the periodic work of the timer units in-process, for machines without systemd")
	fs.BoolVar(&c.InsecureNoAuth, "insecure-no-auth", false, "ask no one for a token: whoever reaches the WEBAPP may do everything, minions' work included (tests and demos only)")
	fs.StringVar(&c.ReadAccess, "read-access", accessAnonymous, "who may read the pages and the read-only routes: anonymous, or token (any token, or a signed-in browser)")
	fs.StringVar(&c.MetricsAccess, "metrics-access", accessAnonymous, "who may read /metrics: anonymous or token")
	fs.StringVar(&c.AdminTokenFile, "admin-token-file", "", "`file` of the admin token that \"lorry-controller-webapp call\" sends; the WEBAPP itself needs none")
	fs.StringVar(&c.NotifyURL, "notify-url", "", "`url` to POST notifications of events to (docs/operations.md); empty: none")
	fs.StringVar(&c.NotifySecretFile, "notify-secret-file", "", "`file` of the secret that signs each notification (HMAC-SHA256); needed with --notify-url")
	fs.StringVar(&c.NotifyEventList, "notify-events", "", "comma-separated `events` to notify of, of "+strings.Join(statedb.Events, ", ")+"; empty: all")
	fs.StringVar(&c.HookSecretFile, "hook-secret-file", "", "`file` of the secret of the forges' push hooks (/1.0/hooks/gitlab, gitea, github); empty: the hooks are off")
	fs.StringVar(&c.PublicURL, "public-url", "", "`url` that browsers reach the WEBAPP at, such as https://lorry.example.org behind a TLS proxy: with https the session cookie is Secure; notifications link to its pages")
	fs.DurationVar(&c.IdleTimeout, "idle-timeout", 2*time.Minute, "close a keep-alive connection idle for this `duration` between requests")
	fs.DurationVar(&c.BodyReadTimeout, "body-read-timeout", 30*time.Second, "answer 408 and close the connection when a request body sends nothing for this `duration`")
	fs.Int64Var(&c.BodyMinRate, "body-min-rate", 1024, "a request body may take --body-read-timeout plus one second for every this many `bytes` that came; 0: no such bound")
	fs.IntVar(&c.MaxConnections, "max-connections", 0, "most connections open at once; at the cap a new one takes the place of the one idle longest; 0: three quarters of the open files allowed")
	fs.StringVar(&c.BackupDirectory, "backup-directory", "", "`dir`ectory that POST /1.0/backup writes backups of the state database into; empty: none")
	fs.StringVar(&c.ConfigFile, "config", "", "read flags from this `file` of key = value lines (the command line wins)")
	warnings, err := flagconf.ParseOriginal(fs, args, "config", flagconf.OriginalWebapp)
	c.Warnings = warnings
	if err != nil {
		return c, err
	}
	if err := checkStateDBOnCommandLine(args); err != nil {
		return c, err
	}
	if c.BackupStateDB != "" {
		if err := statedb.CheckBackupAddress(c.BackupStateDB); err != nil {
			return c, fmt.Errorf("--backup-statedb %s: %w", c.BackupStateDB, err)
		}
	}
	if c.ReplicaLease < 3*time.Second {
		return c, fmt.Errorf("--replica-lease %v: want at least 3s", c.ReplicaLease)
	}
	if c.ReplicaForget <= 2*c.ReplicaLease {
		return c, fmt.Errorf("--replica-forget %v: want more than twice --replica-lease %v, after which a WEBAPP not seen is down",
			c.ReplicaForget, c.ReplicaLease)
	}
	if err := c.Downstream.Validate(); err != nil {
		return c, err
	}
	for _, a := range []struct{ flag, value string }{{"read-access", c.ReadAccess}, {"metrics-access", c.MetricsAccess}} {
		if a.value != accessAnonymous && a.value != accessToken {
			return c, fmt.Errorf("--%s %q: want %s or %s", a.flag, a.value, accessAnonymous, accessToken)
		}
	}
	if c.GhostTimeout <= 0 {
		return c, errors.New("--ghost-timeout must be positive")
	}
	if c.ClaimTimeout <= 0 {
		return c, errors.New("--claim-timeout must be positive")
	}
	if c.IdleTimeout <= 0 || c.BodyReadTimeout <= 0 {
		return c, errors.New("--idle-timeout and --body-read-timeout must be positive")
	}
	if c.BodyMinRate < 0 || c.MaxConnections < 0 {
		return c, errors.New("--body-min-rate and --max-connections must not be negative")
	}
	if err := c.checkNotify(); err != nil {
		return c, err
	}
	if err := c.checkPublicURL(); err != nil {
		return c, err
	}
	if err := c.checkReplicaURL(); err != nil {
		return c, err
	}
	return c, checkLease(c)
}

// checkLease makes sure that a minion cut off from the WEBAPP has killed
// its job, grace included, before the job counts as a ghost and its lorry
// is handed out again: otherwise two runs of the lorry could push at once.
func checkLease(c Config) error {
	if c.Lease < 0 || c.KillGrace < 0 {
		return errors.New("--lease and --kill-grace must not be negative")
	}
	lease := control.EffectiveLease(c.Lease, c.GhostTimeout)
	if lease < time.Second {
		return fmt.Errorf("--lease %v: want at least 1s (it is counted in whole seconds)", lease)
	}
	if c.GhostTimeout <= lease+c.KillGrace {
		return fmt.Errorf("--ghost-timeout %v must be longer than --lease %v plus --kill-grace %v, so that a minion cut off from the WEBAPP kills its job before the job is ended as a ghost",
			c.GhostTimeout, lease, c.KillGrace)
	}
	return nil
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "call" {
		os.Exit(callMain(os.Args[2:], os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "check-config" {
		os.Exit(checkConfigMain(os.Args[2:], os.Stdout, os.Stderr, os.Getenv))
	}
	if len(os.Args) > 1 && os.Args[1] == "token" {
		os.Exit(tokenMain(os.Args[2:], os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "backup" {
		os.Exit(backupMain(os.Args[2:], os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "migrate-statedb" {
		os.Exit(migrateStatedbMain(os.Args[2:], os.Stdout, os.Stderr))
	}
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "lorry-controller-webapp:", err)
		os.Exit(2)
	}
	level, err := journallog.ParseLevel(cfg.LogLevel)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lorry-controller-webapp: --log-level:", err)
		os.Exit(2)
	}
	log := journallog.New(level)
	for _, w := range cfg.Warnings {
		log.Warn("configuration file", "warning", w)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, cfg, log); err != nil {
		log.Error("exiting", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg Config, log *slog.Logger) error {
	clk, fake := newClock(cfg)
	if err := makeStatusHTMLDir(cfg); err != nil {
		return err
	}
	if err := makeBackupDir(cfg); err != nil {
		return err
	}
	unlockConfigDir, err := lockConfigDir(cfg)
	if err != nil {
		return err
	}
	defer unlockConfigDir()
	secret, hookSecret, err := readSecrets(cfg, log)
	if err != nil {
		return err
	}
	stopPprof, err := startPprof(cfg.DebugPprofListen, log)
	if err != nil {
		return err
	}
	defer stopPprof()
	db, err := openStateDB(ctx, cfg, clk, fake, log)
	if err != nil {
		return err
	}
	defer db.Close()

	down, err := downstream.New(cfg.Downstream, downstream.WithLogger(log))
	if err != nil {
		return err
	}
	app := &control.App{
		DB:                db,
		Downstream:        down,
		ListHost:          control.NewHostLister(upstream.ListerOptions{Logger: log}),
		CheckHost:         control.CheckHostSection,
		Config:            &confgit.Source{Dir: cfg.ConfigDir, URL: cfg.ConfgitURL, Branch: cfg.ConfgitBranch, Now: clk.Now},
		Log:               log,
		GhostTimeout:      cfg.GhostTimeout,
		Lease:             cfg.Lease,
		KillGrace:         cfg.KillGrace,
		OutputLimit:       cfg.OutputLimit,
		ClaimTimeout:      cfg.ClaimTimeout,
		JobMaxAge:         cfg.JobMaxAge,
		FakeClock:         fake,
		AllowLocalSources: cfg.AllowLocalSources,
		BackupDirectory:   cfg.BackupDirectory,
		LeaseTerm:         cfg.ReplicaLease,
		ReplicaForget:     cfg.ReplicaForget,
		Background:        ctx,
	}
	if err := app.EndRestoredJobs(ctx); err != nil {
		return err
	}
	srv := &routes.Server{
		App:        app,
		StatusHTML: cfg.StatusHTML,

		InsecureNoAuth:   cfg.InsecureNoAuth,
		ReadNeedsToken:   cfg.ReadAccess == accessToken,
		MetricsNeedToken: cfg.MetricsAccess == accessToken,
		HookSecret:       []byte(hookSecret),
		PublicURL:        cfg.PublicURL,
	}
	var deliver func(context.Context)
	if cfg.NotifyURL != "" {
		app.Notifications = control.Notifications{URL: cfg.NotifyURL, Events: eventNames(cfg.NotifyEvents)}
		d := &webhook.Deliverer{DB: db, URL: cfg.NotifyURL, Secret: []byte(secret), Log: log, PublicURL: cfg.PublicURL}
		deliver = d.Run
	}

	// The schedules tick once before the first request: an event missed
	// while the WEBAPP was stopped fires before a minion can ask, not
	// whenever the scheduler's first tick comes round.
	if _, err := app.Tick(ctx); err != nil {
		log.Warn("first tick", "err", err)
	}
	lns, addr, err := listen(cfg, log)
	if err != nil {
		return err
	}

	app.Replica = replicaOf(cfg, addr)
	handler := srv.Handler()
	hs := newHTTPServer(ctx, cfg, handler, lns, log)
	errc := systemd.Serve(hs, lns)
	// The database is migrated and the listeners are bound: requests are
	// answered from now on.
	systemd.Notify(log, "READY=1\nSTATUS=serving on "+addr)
	bg := startBackground(ctx, cfg, handler, srv, deliver, log)
	defer bg.stop()
	stopBeat := heartbeat(ctx, app, cfg.ReplicaLease/3, log)
	defer stopBeat()
	// The schedules tick, and unconfirmed claims end, whether or not the
	// timers' work is done in-process.
	schedCtx, stopSched := context.WithCancel(ctx)
	schedDone := make(chan struct{})
	go func() {
		defer close(schedDone)
		(&control.Scheduler{App: app}).Run(schedCtx)
	}()
	defer func() {
		stopSched()
		<-schedDone
	}()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	bg.stop()
	systemd.Notify(log, "STOPPING=1")
	log.Info("shutting down", "why", context.Cause(ctx))
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownGrace)
	defer cancel()
	return hs.Shutdown(sctx)
}

// newClock is the WEBAPP's clock: the system's, or with --debug-fake-time
// a fake one, which it also returns.
func newClock(cfg Config) (clock.Clock, *clock.Fake) {
	if cfg.DebugFakeTime {
		fake := &clock.Fake{}
		return fake, fake
	}
	// A test of clock skew runs a WEBAPP as on a machine whose clock is
	// wrong by this much; the STATEDB's times follow its server's clock
	// all the same.
	if d, err := time.ParseDuration(os.Getenv("LORRY_CONTROLLER_TEST_CLOCK_OFFSET")); err == nil && d != 0 {
		return clock.Offset(d), nil
	}
	return clock.System{}, nil
}

// makeStatusHTMLDir makes the directory of --status-html at start, so
// that a status-html request never fails for want of it, and a directory
// that cannot be made stops the start.
func makeStatusHTMLDir(cfg Config) error {
	if cfg.StatusHTML == "" {
		return nil
	}
	dir := filepath.Dir(cfg.StatusHTML)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--status-html: make its directory %s: %w", dir, err)
	}
	return nil
}

// lockConfigDir keeps other WEBAPPs out of the CONFGIT clone that this
// one fetches into, --configuration-directory, until the returned
// function is called: two fetching and repacking one clone at once would
// break it. A repository read without --confgit-url is the operator's,
// which the WEBAPP only reads, and is not locked.
func lockConfigDir(cfg Config) (unlock func(), err error) {
	if cfg.ConfgitURL == "" {
		return func() {}, nil
	}
	if err := os.MkdirAll(cfg.ConfigDir, 0o755); err != nil {
		return nil, fmt.Errorf("--configuration-directory: %w", err)
	}
	l, err := flock.TryExclusiveDir(cfg.ConfigDir)
	if errors.Is(err, flock.ErrLocked) {
		return nil, fmt.Errorf("--configuration-directory %s is in use by another WEBAPP: each WEBAPP of a machine needs its own configuration-directory, and its own status-html", cfg.ConfigDir)
	}
	if err != nil {
		return nil, fmt.Errorf("--configuration-directory: %w", err)
	}
	return func() { l.Unlock() }, nil
}

// listen binds the listeners, or takes those systemd passed, and writes
// the address of the first to --addr-file.
func listen(cfg Config, log *slog.Logger) ([]net.Listener, string, error) {
	lns, activated, err := systemd.Listen(cfg.Listen)
	if err != nil {
		return nil, "", err
	}
	addr := lns[0].Addr().String()
	if cfg.AddrFile != "" {
		if err := writeAddrFile(cfg.AddrFile, addr); err != nil {
			for _, ln := range lns {
				ln.Close()
			}
			return nil, "", err
		}
	}
	log.Info("listening", "addr", addr, "socket_activated", activated, "statedb", statedb.Redact(cfg.StateDB))
	return lns, addr, nil
}

// newHTTPServer is the server of handler on lns, whose connections it
// counts and limits in place, and whose bodies it keeps from stalling.
// Requests' contexts are not cancelled with ctx: shutting down lets them
// finish.
func newHTTPServer(ctx context.Context, cfg Config, handler http.Handler, lns []net.Listener, log *slog.Logger) *http.Server {
	conns := netlimit.NewConns(maxConnections(cfg, log), log)
	for i, ln := range lns {
		lns[i] = conns.Listener(ln)
	}
	return &http.Server{
		Handler:           netlimit.Bodies(handler, cfg.BodyReadTimeout, cfg.BodyMinRate),
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       cfg.IdleTimeout,
		ConnState:         conns.ConnState,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
}

// maxConnections is --max-connections, or what the limit of open files
// leaves for connections.
func maxConnections(cfg Config, log *slog.Logger) int {
	if cfg.MaxConnections > 0 {
		return cfg.MaxConnections
	}
	limit, err := netlimit.DescriptorLimit()
	if err != nil {
		log.Warn("read the limit of open files; connections capped at 1024", "err", err)
		return 1024
	}
	n := netlimit.DefaultMax(limit)
	log.Info("connections capped", "max_connections", n, "open_files_limit", limit)
	return n
}

// writeAddrFile writes addr so that a reader never sees a partial address.
func writeAddrFile(path, addr string) error {
	if err := atomicfile.WriteFile(path, []byte(addr+"\n"), 0o644); err != nil {
		return fmt.Errorf("write address file: %w", err)
	}
	return nil
}
