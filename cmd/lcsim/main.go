// Command lcsim simulates a large installation against a real WEBAPP: it
// builds a CONFGIT of many lorries (kept in a cache directory and reused
// between runs), starts the WEBAPP, reads the configuration, drives
// simulated minions over loopback HTTP for a fixed time, and prints what
// it cost: see docs/performance.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

// options are lcsim's flags.
type options struct {
	shape    Shape
	drive    Drive
	dueRate  float64
	duration time.Duration
	rest     time.Duration
	cache    string
	work     string
	webapp   string
	statedb  string
	profile  string
	keep     bool
	logLevel string
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("lcsim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: lcsim [flags]\n\nSimulate lorries and minions against a real WEBAPP and print what it costs.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	fs.IntVar(&o.shape.Lorries, "lorries", 1_000_000, "`number` of lorries in CONFGIT")
	fs.IntVar(&o.shape.PerFile, "per-file", 10, "lorries per .lorry file")
	fs.IntVar(&o.shape.Sections, "sections", 50, "lorries sections, each with its own queue section")
	fs.IntVar(&o.shape.Threads, "threads", 20, "threads of each queue")
	fs.IntVar(&o.shape.CronEvery, "cron-every", 20, "one .lorry file in this many is on a daily crontab schedule (20: 5%); 0: none")
	fs.Float64Var(&o.dueRate, "due-rate", 300, "jobs falling due per second, which sets the lorries' interval")
	fs.IntVar(&o.drive.Minions, "minions", 500, "simulated minions")
	fs.DurationVar(&o.drive.Idle, "idle", 10*time.Second, "how long an idle minion waits between asks (give or take a fifth)")
	fs.DurationVar(&o.drive.Update, "update", 5*time.Second, "how often a minion sends job-update while it holds a job")
	fs.Float64Var(&o.drive.TailShare, "tail-share", 0.01, "share of jobs that take minutes; the rest take under a second")
	fs.DurationVar(&o.duration, "duration", 2*time.Minute, "how long the minions run")
	fs.DurationVar(&o.rest, "rest", 5*time.Second, "how long the WEBAPP rests after the reads before its resting memory is taken")
	fs.StringVar(&o.cache, "cache", filepath.Join(os.TempDir(), "lcsim-cache"), "`dir`ectory that keeps the CONFGIT (and the WEBAPP built) between runs")
	fs.StringVar(&o.work, "work", "", "`dir`ectory for this run's WEBAPP state; empty: a new temporary one, removed at the end")
	fs.StringVar(&o.webapp, "webapp", "", "`path` of the WEBAPP binary; empty: go build ./cmd/webapp into --cache")
	fs.StringVar(&o.statedb, "statedb", "", "--statedb of the WEBAPP: a `path` or a postgres:// URL; empty: state.db in --work")
	fs.StringVar(&o.profile, "profile", "", "`dir`ectory to write CPU and heap profiles of the WEBAPP to; empty: none")
	fs.BoolVar(&o.keep, "keep", false, "keep --work at the end")
	fs.StringVar(&o.logLevel, "log-level", "warn", "the WEBAPP's --log-level")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.shape.Lorries < 1 || o.shape.PerFile < 1 || o.shape.Sections < 1 || o.drive.Minions < 0 || o.dueRate <= 0 {
		return o, errors.New("--lorries, --per-file, --sections and --due-rate must be positive, --minions not negative")
	}
	o.shape.Interval = max(1, int64(float64(o.shape.intervalLorries())/o.dueRate+0.5))
	return o, nil
}

func main() {
	o, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "lcsim:", err)
		os.Exit(1)
	}
}

// run runs the simulation and prints its report to stdout, and its
// progress to stderr.
func run(ctx context.Context, o options, stdout, stderr io.Writer) error {
	logf := func(format string, args ...any) {
		fmt.Fprintf(stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
	}
	if err := os.MkdirAll(o.cache, 0o755); err != nil {
		return err
	}
	work := o.work
	if work == "" {
		var err error
		if work, err = os.MkdirTemp("", "lcsim-work-"); err != nil {
			return err
		}
		if !o.keep {
			defer os.RemoveAll(work)
		}
	} else if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	bin, err := webappBinary(ctx, o, logf)
	if err != nil {
		return err
	}
	repo, err := buildConfgit(ctx, o.cache, o.shape, logf)
	if err != nil {
		return err
	}
	statedb := o.statedb
	if statedb == "" {
		statedb = filepath.Join(work, "state.db")
	}
	args := webappArgs{bin: bin, statedb: statedb, dir: work, confgit: "file://" + repo, logLevel: o.logLevel}
	s := &sim{o: o, args: args, repo: repo, logf: logf}
	if err := s.readPhase(ctx); err != nil {
		return err
	}
	if err := s.spreadDue(ctx); err != nil {
		return err
	}
	if err := s.drivePhase(ctx); err != nil {
		return err
	}
	s.rep.DBSize = dbSize(ctx, statedb)
	s.rep.print(stdout, o)
	return nil
}

// webappBinary is --webapp, or the WEBAPP built from the module lcsim is
// run in.
func webappBinary(ctx context.Context, o options, logf func(string, ...any)) (string, error) {
	if o.webapp != "" {
		return o.webapp, nil
	}
	bin := filepath.Join(o.cache, "lorry-controller-webapp")
	logf("building the WEBAPP into %s", bin)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "lorrycontroller.dev/lc/cmd/webapp")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build the WEBAPP (or give --webapp): %w", err)
	}
	return bin, nil
}
