package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"lorrycontroller.dev/lc/venv"
)

// gcMain is lorry-controller-minion gc: it reads the same flags and
// --config file as the minion, and returns the exit code.
func gcMain(args []string, stdout, stderr io.Writer) int {
	cfg, err := parseArgs(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "lorry-controller-minion gc:", err)
		return 2
	}
	if err := runGC(cfg, stdout); err != nil {
		fmt.Fprintln(stderr, "lorry-controller-minion gc:", err)
		return 1
	}
	return 0
}

// runGC removes the runtimes and the scraper working directories that no
// job uses, and says what it removed and what it kept because a job or a
// minion holds it.
func runGC(cfg Config, out io.Writer) error {
	jobUser, err := lookupJobUser(cfg.JobUser)
	if err != nil {
		return err
	}
	c, err := venv.New(venv.Config{Dir: cfg.RuntimeCache, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), User: jobUser})
	if err != nil {
		return err
	}
	runtimes, err := c.GC(cfg.KeepUnused)
	report(out, "runtime", runtimes)
	if err != nil {
		return err
	}
	dirs, err := venv.GCWorkDirs(cfg.WorkingArea, jobUser)
	report(out, "scraper working directory", dirs)
	return err
}

func report(out io.Writer, what string, res venv.GCResult) {
	for _, r := range res.Removed {
		fmt.Fprintf(out, "removed %s %s: %s\n", what, r.Path, r.Reason)
	}
	for _, r := range res.InUse {
		if r.Reason == "" {
			fmt.Fprintf(out, "kept %s %s: in use\n", what, r.Path)
			continue
		}
		fmt.Fprintf(out, "kept %s %s: in use (%s)\n", what, r.Path, r.Reason)
	}
}

// stringList is a flag that may be given many times.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, " ") }

func (l *stringList) Set(v string) error {
	*l = append(*l, v)
	return nil
}
