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
	"syscall"
	"time"

	"lorrycontroller/clock"
	"lorrycontroller/confgit"
	"lorrycontroller/flagconf"
	"lorrycontroller/hosts"
	"lorrycontroller/journallog"
	"lorrycontroller/routes"
	"lorrycontroller/statedb"
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
	JobMaxAge     time.Duration
	OutputLimit   int64
	DebugFakeTime bool
	LogLevel      string
	Downstream    hosts.DownstreamConfig
	ShutdownGrace time.Duration
	PeriodicWork  bool
	// Warnings are about the configuration file, for the log.
	Warnings []string
}

func parseFlags(args []string, stderr io.Writer) (Config, error) {
	var c Config
	fs := flag.NewFlagSet("lorry-controller-webapp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: lorry-controller-webapp [flags]\n\n"+
			"Serve the Lorry Controller /1.0 API and status page.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	fs.StringVar(&c.StateDB, "statedb", "lorry-controller.db", "`path` of the state database (SQLite)")
	fs.StringVar(&c.ConfigDir, "configuration-directory", "confgit", "`dir`ectory of the local CONFGIT clone")
	fs.StringVar(&c.ConfgitURL, "confgit-url", "", "`url` of CONFGIT to clone and fetch; empty: use the repository already in --configuration-directory")
	fs.StringVar(&c.ConfgitBranch, "confgit-branch", "master", "CONFGIT `branch` to read (falls back to the remote's HEAD if it does not exist)")
	fs.StringVar(&c.Listen, "listen", "127.0.0.1:12765", "`address` to listen on (\":0\" picks a free port)")
	fs.StringVar(&c.AddrFile, "addr-file", "", "write the bound address to this `file` once listening")
	fs.StringVar(&c.StatusHTML, "status-html", "", "`path` of the on-disk status page that status-html rewrites")
	fs.DurationVar(&c.GhostTimeout, "ghost-timeout", 15*time.Minute, "end running jobs with no update for this `duration` (remove-ghost-jobs)")
	fs.DurationVar(&c.JobMaxAge, "job-max-age", 30*24*time.Hour, "default age beyond which remove-old-jobs forgets finished jobs")
	fs.Int64Var(&c.OutputLimit, "job-output-limit", statedb.DefaultOutputLimit, "`bytes` of output kept per job (head and tail)")
	fs.BoolVar(&c.DebugFakeTime, "debug-fake-time", false, "use a fake clock that starts at 0 and moves only by POST /1.0/pretend-time")
	c.Downstream.RegisterFlags(fs)
	fs.StringVar(&c.LogLevel, "log-level", "info", "log `level`: debug, info, warn or error")
	fs.DurationVar(&c.ShutdownGrace, "shutdown-grace", 10*time.Second, "how long to let requests finish on shutdown")
	fs.BoolVar(&c.PeriodicWork, "periodic-work", false, "do the periodic work of the timer units in-process, for machines without systemd")
	var configFile string
	fs.StringVar(&configFile, "config", "", "read flags from this `file` of key = value lines (the command line wins)")
	var old oldListen
	warnings, err := flagconf.ParseWith(fs, args, "config", old.options())
	c.Warnings = warnings
	if err != nil {
		return c, err
	}
	if err := old.apply(fs, &c.Listen); err != nil {
		return c, err
	}
	if err := c.Downstream.Validate(); err != nil {
		return c, err
	}
	if c.GhostTimeout <= 0 {
		return c, errors.New("--ghost-timeout must be positive")
	}
	return c, nil
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "call" {
		os.Exit(callMain(os.Args[2:], os.Stdout, os.Stderr))
	}
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "lorry-controller-webapp:", err)
		os.Exit(2)
	}
	level, err := parseLevel(cfg.LogLevel)
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
	var clk clock.Clock = clock.System{}
	var fake *clock.Fake
	if cfg.DebugFakeTime {
		fake = &clock.Fake{}
		clk = fake
	}
	if cfg.StatusHTML != "" {
		// Made now, so that a status-html request never fails for want of
		// it, and a directory that cannot be made stops the start.
		dir := filepath.Dir(cfg.StatusHTML)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("--status-html: make its directory %s: %w", dir, err)
		}
	}
	db, err := statedb.Open(ctx, cfg.StateDB, statedb.Options{Clock: clk, OutputLimit: cfg.OutputLimit})
	if err != nil {
		return err
	}
	defer db.Close()
	if fake != nil {
		err := db.View(ctx, func(tx *statedb.Tx) error {
			now, err := tx.FakeNow(ctx)
			fake.Set(now)
			return err
		})
		if err != nil {
			return err
		}
		log.Warn("fake clock in use", "now", fake.Now().Unix())
	}

	downstream, err := hosts.NewDownstream(cfg.Downstream, hosts.WithDownstreamLogger(log))
	if err != nil {
		return err
	}
	srv := &routes.Server{
		DB:           db,
		Downstream:   downstream,
		ListHost:     routes.NewHostLister(hosts.ListerOptions{Logger: log}),
		CheckHost:    routes.CheckHostSection,
		Config:       &confgit.Source{Dir: cfg.ConfigDir, URL: cfg.ConfgitURL, Branch: cfg.ConfgitBranch},
		Log:          log,
		StatusHTML:   cfg.StatusHTML,
		GhostTimeout: cfg.GhostTimeout,
		JobMaxAge:    cfg.JobMaxAge,
		FakeClock:    fake,
	}

	lns, activated, err := listen(cfg.Listen)
	if err != nil {
		return err
	}
	addr := lns[0].Addr().String()
	if cfg.AddrFile != "" {
		if err := writeAddrFile(cfg.AddrFile, addr); err != nil {
			for _, ln := range lns {
				ln.Close()
			}
			return err
		}
	}
	log.Info("listening", "addr", addr, "socket_activated", activated, "statedb", cfg.StateDB)

	handler := srv.Handler()
	hs := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 30 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	errc := serve(hs, lns)
	// The database is migrated and the listeners are bound: requests are
	// answered from now on.
	notify(log, "READY=1\nSTATUS=serving on "+addr)
	bg := startBackground(ctx, cfg, handler, log)
	defer bg.stop()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	bg.stop()
	notify(log, "STOPPING=1")
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownGrace)
	defer cancel()
	return hs.Shutdown(sctx)
}

// writeAddrFile writes addr so that a reader never sees a partial address.
func writeAddrFile(path, addr string) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, []byte(addr+"\n"), 0o644); err != nil {
		return fmt.Errorf("write address file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write address file: %w", err)
	}
	return nil
}
