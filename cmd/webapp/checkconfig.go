package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"lorrycontroller.dev/lc/confgit"
	"lorrycontroller.dev/lc/control"
	"lorrycontroller.dev/lc/statedb"
	"lorrycontroller.dev/lc/wire"
)

// The exit codes of check-config.
const (
	checkGood       = 0
	checkBroken     = 1
	checkUnreadable = 2
)

// checkReport is what check-config found; --json prints it as it is.
type checkReport struct {
	// OK says that read-configuration would apply the whole
	// configuration: no errors (warnings are allowed).
	OK bool `json:"ok"`
	// Source is the directory, or the repository, read.
	Source string `json:"source"`
	// Rev is the revision asked for, with --git-dir, and Commit the
	// commit it names, once it is known.
	Rev    string `json:"rev,omitempty"`
	Commit string `json:"commit,omitempty"`
	// Error says why the configuration could not be read at all (exit
	// 2); then there is nothing else.
	Error    string         `json:"error,omitempty"`
	Errors   []checkProblem `json:"errors"`
	Warnings []checkProblem `json:"warnings"`
	// Summary is what read-configuration would apply; null when
	// lorry-controller.conf is broken, as it would apply nothing.
	Summary *checkSummary `json:"summary"`
}

// checkProblem is one error or warning: the file, and in it the section
// of lorry-controller.conf or the spec of a .lorry or .scraper file, and
// the key, where known. Message is whole, as read-configuration says it.
type checkProblem struct {
	File    string `json:"file"`
	Section *int   `json:"section,omitempty"`
	Type    string `json:"type,omitempty"`
	Spec    string `json:"spec,omitempty"`
	Key     string `json:"key,omitempty"`
	Message string `json:"error"`
}

// checkSummary counts what a configuration defines.
type checkSummary struct {
	Lorries   int             `json:"lorries"`
	Scrapers  int             `json:"scrapers"`
	Hosts     int             `json:"hosts"`
	Queues    int             `json:"queues"`
	Schedules []checkSchedule `json:"schedules"`
}

// checkSchedule is one schedule: of an entry (Path) or of a queue's
// threads (Queue), and when it next fires from now, if ever.
type checkSchedule struct {
	Path     string     `json:"path,omitempty"`
	Queue    string     `json:"queue,omitempty"`
	Describe string     `json:"describe"`
	Next     *time.Time `json:"next"`
}

// checkConfigMain is "lorry-controller-webapp check-config": it reads a
// configuration as read-configuration would, with the same code, and says
// what is wrong with it and what it defines. It returns the exit code.
// getenv gives the object directories of a push in quarantine, when run
// by a pre-receive hook.
func checkConfigMain(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := flag.NewFlagSet("lorry-controller-webapp check-config", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: lorry-controller-webapp check-config [flags] [DIR]
       lorry-controller-webapp check-config [flags] --git-dir DIR [--rev REV]

Read a CONFGIT configuration as read-configuration would, print every
error with its file, section (or spec) and key, then a one-line summary.
DIR is a directory of its files, such as a checkout, committed or not
(default: the current directory); --git-dir reads the commit REV of a
repository instead, as the pre-receive hook does. Exit status: 0 for a
configuration without errors, 1 for one with errors, 2 for one that could
not be read. A broken lorry-controller.conf is refused whole by
read-configuration; a broken .lorry or .scraper file is skipped, and is
an error here all the same unless --warn-lorry-files is given.

Flags:
`)
		fs.PrintDefaults()
	}
	gitDir := fs.String("git-dir", "", "read from the git repository in this `dir`ectory (bare or not)")
	rev := fs.String("rev", "HEAD", "with --git-dir, the `revision` to read: a commit id or a branch")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	warnFiles := fs.Bool("warn-lorry-files", false, "count broken .lorry and .scraper files, which read-configuration skips, as warnings, not errors")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return checkGood
		}
		return checkUnreadable
	}
	if fs.NArg() > 1 || (fs.NArg() == 1 && *gitDir != "") {
		fmt.Fprintln(stderr, "lorry-controller-webapp check-config: give one DIR, or --git-dir")
		return checkUnreadable
	}
	now := time.Now()
	var rep checkReport
	var cfg *confgit.Config
	var err error
	if *gitDir != "" {
		rep.Source, rep.Rev = *gitDir, *rev
		cfg, err = confgit.ReadRevision(context.Background(), *gitDir, *rev, objectDirs(*gitDir, getenv), now)
	} else {
		dir := "."
		if fs.NArg() == 1 {
			dir = fs.Arg(0)
		}
		rep.Source = dir
		cfg, err = parseDir(dir)
	}
	code := rep.check(cfg, err, *warnFiles, now)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintln(stderr, "lorry-controller-webapp check-config:", err)
			return checkUnreadable
		}
		return code
	}
	rep.print(stdout)
	return code
}

// parseDir reads the configuration in the files of dir, and nothing
// outside it: a symbolic link is not followed, as --git-dir follows none.
func parseDir(dir string) (*confgit.Config, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	// The root refuses any path that leaves dir, and Parse follows no
	// symbolic link inside it.
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return confgit.Parse(root.FS())
}

// objectDirs are the object directories that git names for a hook, the
// quarantine of a push first, but for the repository's own.
func objectDirs(gitDir string, getenv func(string) string) []string {
	own, _ := filepath.Abs(filepath.Join(gitDir, "objects"))
	var out []string
	dirs := []string{getenv("GIT_OBJECT_DIRECTORY")}
	dirs = append(dirs, filepath.SplitList(getenv("GIT_ALTERNATE_OBJECT_DIRECTORIES"))...)
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if abs, err := filepath.Abs(d); err == nil && abs != own && !slices.Contains(out, abs) {
			out = append(out, abs)
		}
	}
	return out
}

// check fills in the report on cfg, or on readErr, and returns the exit
// code.
func (r *checkReport) check(cfg *confgit.Config, readErr error, warnFiles bool, now time.Time) int {
	r.Errors, r.Warnings = []checkProblem{}, []checkProblem{}
	if readErr == nil {
		r.Commit = cfg.Commit
		// What read-configuration checks beyond reading, with the
		// WEBAPP's own check of host sections.
		readErr = control.CheckSections(cfg, control.CheckHostSection)
	}
	if readErr != nil {
		if !errors.Is(readErr, confgit.ErrBadConf) {
			r.Commit, r.Error = "", readErr.Error()
			return checkUnreadable
		}
		r.Errors = confProblems(readErr)
		// The files that the good sections select were read too: their
		// errors are shown now, not after lorry-controller.conf is fixed.
		var broken *confgit.BrokenConf
		if errors.As(readErr, &broken) {
			r.Commit = broken.Config.Commit
			r.fileProblems(broken.Config, warnFiles)
		}
		return checkBroken
	}
	r.fileProblems(cfg, warnFiles)
	r.Summary = summarize(cfg, now)
	r.OK = len(r.Errors) == 0
	if !r.OK {
		return checkBroken
	}
	return checkGood
}

// fileProblems adds the errors of cfg's .lorry and .scraper files, as
// warnings with warnFiles.
func (r *checkReport) fileProblems(cfg *confgit.Config, warnFiles bool) {
	for _, e := range cfg.Errors {
		p := checkProblem{File: e.File, Spec: e.Spec, Key: e.Key, Message: e.File + ": " + e.Error}
		if warnFiles {
			r.Warnings = append(r.Warnings, p)
		} else {
			r.Errors = append(r.Errors, p)
		}
	}
}

// confProblems are the problems of a broken lorry-controller.conf: each
// error that err joins, with the section and key of its *ConfError.
func confProblems(err error) []checkProblem {
	var out []checkProblem
	for _, e := range leaves(err) {
		p := checkProblem{File: confgit.ConfFile, Message: e.Error()}
		var ce *confgit.ConfError
		if errors.As(e, &ce) {
			if ce.Section >= 0 {
				p.Section = &ce.Section
			}
			p.Type, p.Key = ce.Type, ce.Key
		}
		out = append(out, p)
	}
	return out
}

// leaves are the errors that err joins, or err alone.
func leaves(err error) []error {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if joined, ok := e.(interface{ Unwrap() []error }); ok {
			var out []error
			for _, c := range joined.Unwrap() {
				out = append(out, leaves(c)...)
			}
			return out
		}
	}
	return []error{err}
}

// summarize counts what cfg defines, and finds when its schedules next
// fire.
func summarize(cfg *confgit.Config, now time.Time) *checkSummary {
	s := &checkSummary{Hosts: len(cfg.Hosts), Queues: len(cfg.Queues), Schedules: []checkSchedule{}}
	next := func(t int64, ok bool) *time.Time {
		if !ok {
			return nil
		}
		u := time.Unix(t, 0).UTC()
		return &u
	}
	for _, l := range cfg.Lorries {
		if l.Kind == wire.KindScraper {
			s.Scrapers++
		} else {
			s.Lorries++
		}
		if l.Cron != nil {
			s.Schedules = append(s.Schedules, checkSchedule{Path: l.Path, Describe: l.Cron.Describe(),
				Next: next(l.Cron.FirstMatch(now.Unix()))})
		}
	}
	for _, q := range cfg.Queues {
		// confgit has checked every item; one it could not read again
		// is left out.
		entries, _ := statedb.ParseThreadsSchedule(q.Schedule)
		for _, e := range entries {
			s.Schedules = append(s.Schedules, checkSchedule{Queue: q.Name,
				Describe: fmt.Sprintf("%s: threads %s", e.Item.Describe(), threadsText(e.Threads)),
				Next:     next(e.Item.FirstMatch(now.Unix()))})
		}
	}
	return s
}

func threadsText(n *int64) string {
	if n == nil {
		return "unlimited"
	}
	return fmt.Sprint(*n)
}

// print writes the report for people: each error and warning on a line
// of its own, then the summary.
func (r *checkReport) print(w io.Writer) {
	if r.Error != "" {
		fmt.Fprintf(w, "cannot read the configuration: %s\n", r.Error)
		return
	}
	for _, p := range r.Errors {
		fmt.Fprintf(w, "error: %s\n", p.Message)
	}
	for _, p := range r.Warnings {
		fmt.Fprintf(w, "warning: %s (read-configuration skips it)\n", p.Message)
	}
	where := r.Source
	if r.Rev != "" {
		where = r.Rev
		if r.Commit != "" && r.Commit != r.Rev {
			where += " (" + r.Commit + ")"
		}
	}
	if r.Summary == nil {
		fmt.Fprintf(w, "%s: %s is broken, %s", where, confgit.ConfFile, count(len(r.Errors), "error"))
		if len(r.Warnings) > 0 {
			fmt.Fprintf(w, ", %s", count(len(r.Warnings), "warning"))
		}
		fmt.Fprintln(w, ": read-configuration would refuse the whole configuration")
		return
	}
	s := r.Summary
	fmt.Fprintf(w, "%s: %s, %s, %s, %s, %s; %s, %s\n", where,
		count(s.Lorries, "lorry"), count(s.Scrapers, "scraper"), count(s.Hosts, "host"),
		count(s.Queues, "queue"), s.schedulesText(), count(len(r.Errors), "error"), count(len(r.Warnings), "warning"))
}

// schedulesText counts the schedules and names the one that fires next.
func (s *checkSummary) schedulesText() string {
	text := count(len(s.Schedules), "schedule")
	var first *checkSchedule
	for i, sc := range s.Schedules {
		if sc.Next != nil && (first == nil || sc.Next.Before(*first.Next)) {
			first = &s.Schedules[i]
		}
	}
	if first == nil {
		return text
	}
	who := first.Path
	if who == "" {
		who = "queue " + first.Queue
	}
	return fmt.Sprintf("%s (next firing %s, %s)", text, first.Next.Format(time.RFC3339), who)
}

// count is n and noun, in the plural unless n is 1.
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "y") {
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(noun, "y"))
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
