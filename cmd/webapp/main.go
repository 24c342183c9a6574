// Command lorry-controller-webapp is the WEBAPP: it owns the state
// database, reads CONFGIT, holds the run queue, and serves the /1.0 API
// that admins and minions use.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"lorrycontroller.dev/lc/atomicfile"
	"lorrycontroller.dev/lc/clock"
	"lorrycontroller.dev/lc/confgit"
	"lorrycontroller.dev/lc/control"
	"lorrycontroller.dev/lc/flock"
	"lorrycontroller.dev/lc/hosts/downstream"
	"lorrycontroller.dev/lc/hosts/upstream"
	"lorrycontroller.dev/lc/journallog"
	"lorrycontroller.dev/lc/netlimit"
	"lorrycontroller.dev/lc/periodic"
	"lorrycontroller.dev/lc/routes"
	"lorrycontroller.dev/lc/statedb"
	"lorrycontroller.dev/lc/systemd"
	"lorrycontroller.dev/lc/webappconf"
	"lorrycontroller.dev/lc/webhook"
)

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
	cfg, err := webappconf.Parse(os.Args[1:], os.Stderr)
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

// run is the WEBAPP until ctx ends: it opens the store, builds the
// application on it, serves it and stops.
func run(ctx context.Context, cfg webappconf.Config, log *slog.Logger) error {
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
	secret, hookSecret, err := cfg.ReadSecrets(log)
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
	app, err := newApp(ctx, cfg, db, clk, fake, log)
	if err != nil {
		return err
	}
	srv := &routes.Server{
		App:        app,
		StatusHTML: cfg.StatusHTML,

		InsecureNoAuth:   cfg.InsecureNoAuth,
		ReadNeedsToken:   cfg.ReadAccess == webappconf.AccessToken,
		MetricsNeedToken: cfg.MetricsAccess == webappconf.AccessToken,
		HookSecret:       []byte(hookSecret),
		PublicURL:        cfg.PublicURL,
	}
	var deliver func(context.Context)
	if cfg.NotifyURL != "" {
		app.Notifications = control.Notifications{URL: cfg.NotifyURL, Events: cfg.NotifyEventNames()}
		d := &webhook.Deliverer{DB: db, URL: cfg.NotifyURL, Secret: []byte(secret), Log: log, PublicURL: cfg.PublicURL}
		deliver = d.Run
	}
	// The schedules tick once before the first request: an event missed
	// while the WEBAPP was stopped fires before a minion can ask, not
	// whenever the scheduler's first tick comes round.
	if _, err := app.Tick(ctx); err != nil {
		log.Warn("first tick", "err", err)
	}
	return serve(ctx, cfg, srv, deliver, log)
}

// newApp is the application on db, with the jobs that a restore left
// running ended.
func newApp(ctx context.Context, cfg webappconf.Config, db *statedb.DB, clk clock.Clock, fake *clock.Fake, log *slog.Logger) (*control.App, error) {
	down, err := downstream.New(cfg.Downstream, downstream.WithLogger(log))
	if err != nil {
		return nil, err
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
	return app, app.EndRestoredJobs(ctx)
}

// serve answers requests to srv, and does the background work, until
// ctx ends or the server fails; then it lets the requests finish.
func serve(ctx context.Context, cfg webappconf.Config, srv *routes.Server, deliver func(context.Context), log *slog.Logger) error {
	lns, addr, err := listen(cfg, log)
	if err != nil {
		return err
	}
	app := srv.App
	app.Replica = control.ReplicaOf(cfg.ReplicaName, cfg.ReplicaURL, addr)
	handler := srv.Handler()
	hs := newHTTPServer(ctx, cfg, handler, lns, log)
	errc := systemd.Serve(hs, lns)
	// The database is migrated and the listeners are bound: requests are
	// answered from now on.
	systemd.Notify(log, "READY=1\nSTATUS=serving on "+addr)
	stopBackground := goAll(ctx, background(cfg, handler, srv, deliver, log)...)
	defer stopBackground()
	// The WEBAPP beats, the schedules tick and unconfirmed claims end,
	// whether or not the timers' work is done in-process, until the
	// requests have finished.
	defer goAll(ctx, (&control.Heartbeater{App: app, Every: cfg.ReplicaLease / 3}).Run,
		(&control.Scheduler{App: app}).Run)()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	stopBackground()
	systemd.Notify(log, "STOPPING=1")
	log.Info("shutting down", "why", context.Cause(ctx))
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownGrace)
	defer cancel()
	return hs.Shutdown(sctx)
}

// newClock is the WEBAPP's clock: the system's, or with --debug-fake-time
// a fake one, which it also returns.
func newClock(cfg webappconf.Config) (clock.Clock, *clock.Fake) {
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
func makeStatusHTMLDir(cfg webappconf.Config) error {
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
func lockConfigDir(cfg webappconf.Config) (unlock func(), err error) {
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
func listen(cfg webappconf.Config, log *slog.Logger) ([]net.Listener, string, error) {
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
func newHTTPServer(ctx context.Context, cfg webappconf.Config, handler http.Handler, lns []net.Listener, log *slog.Logger) *http.Server {
	conns := netlimit.NewConns(netlimit.Max(cfg.MaxConnections, log), log)
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

// writeAddrFile writes addr so that a reader never sees a partial address.
func writeAddrFile(path, addr string) error {
	if err := atomicfile.WriteFile(path, []byte(addr+"\n"), 0o644); err != nil {
		return fmt.Errorf("write address file: %w", err)
	}
	return nil
}

// background is the work the WEBAPP does besides serving requests: the
// watchdog if systemd asks for one (WatchdogSec=), which checks the
// WEBAPP through h, its own routes; with --periodic-work the timers'
// work, which calls work, its operations; and deliver, if not nil, which
// delivers notifications.
func background(cfg webappconf.Config, h http.Handler, work periodic.Work, deliver func(context.Context), log *slog.Logger) []func(context.Context) {
	var runs []func(context.Context)
	if wd := systemd.NewWatchdog(h, log); wd != nil {
		log.Info("watchdog on", "ping_every", wd.Every.String())
		runs = append(runs, wd.Run)
	}
	if cfg.PeriodicWork {
		p := &periodic.Runner{Work: work, Tasks: periodic.Tasks, Log: log}
		log.Info("doing the periodic work in-process")
		runs = append(runs, p.Run)
	}
	if deliver != nil {
		log.Info("delivering notifications", "events", strings.Join(cfg.NotifyEventNames(), ","))
		runs = append(runs, deliver)
	}
	return runs
}

// goAll runs each of runs in a goroutine of its own until the function
// it returns is called, which ends them and waits for them, so that
// nothing uses the database after it is closed. That function may be
// called more than once.
func goAll(ctx context.Context, runs ...func(context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, run := range runs {
		wg.Go(func() { run(ctx) })
	}
	return sync.OnceFunc(func() { cancel(); wg.Wait() })
}
