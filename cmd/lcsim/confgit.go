package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Shape is the CONFGIT the simulation builds: Lorries lorries in .lorry
// files of PerFile each, spread over Sections lorries sections, each in
// its own queue section with Threads threads (queues are a section's key,
// so each section names one queue). One file in CronEvery has its specs
// on a daily crontab schedule; the rest run every Interval seconds.
type Shape struct {
	Lorries   int
	PerFile   int
	Sections  int
	Threads   int
	CronEvery int
	Interval  int64
}

// files is how many .lorry files the shape has.
func (s Shape) files() int { return (s.Lorries + s.PerFile - 1) / s.PerFile }

// scheduled says whether file f is one of the scheduled ones.
func (s Shape) scheduled(f int) bool { return s.CronEvery > 0 && f%s.CronEvery == s.CronEvery-1 }

// intervalLorries is how many lorries run every Interval.
func (s Shape) intervalLorries() int {
	n := 0
	for f := range s.files() {
		if !s.scheduled(f) {
			n += s.lorriesIn(f)
		}
	}
	return n
}

func (s Shape) lorriesIn(f int) int { return min(s.PerFile, s.Lorries-f*s.PerFile) }

// key names the shape, so that a cache directory holds one CONFGIT per
// shape and reuses it.
func (s Shape) key() string {
	return fmt.Sprintf("l%d-f%d-s%d-t%d-c%d-i%d", s.Lorries, s.PerFile, s.Sections, s.Threads, s.CronEvery, s.Interval)
}

// filePath is the path in CONFGIT of file f.
func (s Shape) filePath(f int) string {
	return fmt.Sprintf("s%02d/f%06d.lorry", f%s.Sections, f)
}

// LorryPath is the run-queue path of the first lorry of file f.
func (s Shape) LorryPath(f int) string {
	return fmt.Sprintf("s%02d/f%06d-0", f%s.Sections, f)
}

// confFile is lorry-controller.conf of the shape.
func (s Shape) confFile() []byte {
	var secs []map[string]any
	for i := range s.Sections {
		secs = append(secs, map[string]any{"type": "queue", "name": fmt.Sprintf("q%02d", i), "threads": s.Threads})
	}
	for i := range s.Sections {
		secs = append(secs, map[string]any{
			"type": "lorries", "prefix": fmt.Sprintf("s%02d", i), "globs": []string{fmt.Sprintf("s%02d/*.lorry", i)},
			"interval": s.Interval, "queue": fmt.Sprintf("q%02d", i), "lorry-timeout": "1h",
		})
	}
	b, _ := json.MarshalIndent(secs, "", "  ")
	return append(b, '\n')
}

// lorryFile is the text of file f; gen changes every URL in it, for the
// one-file change.
func (s Shape) lorryFile(f int, gen int) []byte {
	var b bytes.Buffer
	b.WriteString("{\n")
	n := s.lorriesIn(f)
	for i := range n {
		fmt.Fprintf(&b, "  %q: {\"type\": \"git\", \"url\": \"https://git.example.org/g%d/f%06d/r%d.git\"", fmt.Sprintf("f%06d-%d", f, i), gen, f, i)
		if s.scheduled(f) {
			fmt.Fprintf(&b, `, "schedule": {"cron": "%d %d * * *", "timezone": "UTC", "dst_fixes": ["skip", "repeat_use_only_early"], "max_shift_seconds_for_unskip_and_do_not_repeat": 3600}`,
				f%60, (f/60)%24)
		}
		b.WriteString("}")
		if i < n-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("}\n")
	return b.Bytes()
}

// Refs of the cached CONFGIT: base is the configuration, change the same
// with one file changed. The WEBAPP reads master, which the simulation
// points at one or the other.
const (
	refBase   = "refs/heads/base"
	refChange = "refs/heads/change"
	refMaster = "refs/heads/master"
)

// buildConfgit makes, unless the cache has it already, a bare CONFGIT of
// the shape under cache, and answers its path with master at base.
func buildConfgit(ctx context.Context, cache string, s Shape, logf func(string, ...any)) (string, error) {
	dir := filepath.Join(cache, "confgit-"+s.key()+".git")
	if _, err := os.Stat(filepath.Join(dir, "lcsim-complete")); err == nil {
		logf("reusing CONFGIT %s", dir)
		return dir, setMaster(ctx, dir, refBase)
	}
	logf("building CONFGIT of %d lorries in %d files in %s", s.Lorries, s.files(), dir)
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	if err := git(ctx, "", "init", "-q", "--bare", dir); err != nil {
		return "", err
	}
	if err := fastImport(ctx, dir, s); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "lcsim-complete"), nil, 0o644); err != nil {
		return "", err
	}
	return dir, setMaster(ctx, dir, refBase)
}

// fastImport writes both commits of the shape into the repository dir.
func fastImport(ctx context.Context, dir string, s Shape) error {
	cmd := exec.CommandContext(ctx, "git", "fast-import", "--quiet")
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	w := bufio.NewWriterSize(in, 1<<20)
	blob := func(path string, data []byte) {
		fmt.Fprintf(w, "M 100644 inline %s\ndata %d\n", path, len(data))
		w.Write(data)
		w.WriteString("\n")
	}
	const who = "lcsim <lcsim@example.org> 1700000000 +0000"
	fmt.Fprintf(w, "commit %s\nmark :1\ncommitter %s\ndata 4\nbase\n", refBase, who)
	blob("lorry-controller.conf", s.confFile())
	for f := range s.files() {
		blob(s.filePath(f), s.lorryFile(f, 0))
	}
	changed := s.files() / 2
	fmt.Fprintf(w, "\ncommit %s\ncommitter %s\ndata 6\nchange\nfrom :1\n", refChange, who)
	blob(s.filePath(changed), s.lorryFile(changed, 1))
	err = w.Flush()
	if cerr := in.Close(); err == nil {
		err = cerr
	}
	if werr := cmd.Wait(); err == nil {
		err = werr
	}
	if err != nil {
		return fmt.Errorf("git fast-import: %w", err)
	}
	return nil
}

// setMaster points master at ref.
func setMaster(ctx context.Context, dir, ref string) error {
	return git(ctx, dir, "update-ref", refMaster, ref)
}

func git(ctx context.Context, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, out.String())
	}
	return nil
}
