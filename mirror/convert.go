package mirror

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"lorrycontroller.dev/lc/atomicfile"
	"lorrycontroller.dev/lc/redact"
)

// What the converters of other version control systems share.
//
// A converter works in its own directory beside the mirror and never
// writes the mirror's refs itself: a conversion that fails half-way must
// leave the mirror as the last good run left it. Only when a conversion
// step has succeeded are its branches and tags fetched into the mirror,
// in one atomic transaction.

// converterTool is a program a converter runs, with the Debian package that
// provides it, so that the admin of a machine without it knows what to
// install.
type converterTool struct {
	program string // a command in PATH, or git's "git-<name>" commands
	pkg     string
}

// needConverterTools fails unless every tool is installed, naming each missing
// program and its package. It is checked before anything is converted.
func needConverterTools(ctx context.Context, typ string, tools ...converterTool) error {
	var programs, pkgs []string
	for _, t := range tools {
		if toolInstalled(ctx, t.program) {
			continue
		}
		programs = append(programs, t.program)
		if !slices.Contains(pkgs, t.pkg) {
			pkgs = append(pkgs, t.pkg)
		}
	}
	if len(programs) == 0 {
		return nil
	}
	quoted := make([]string, len(pkgs))
	for i, p := range pkgs {
		quoted[i] = fmt.Sprintf("%q", p)
	}
	noun := "package"
	if len(pkgs) > 1 {
		noun = "packages"
	}
	return fmt.Errorf("%s specs need %s: install the Debian %s %s",
		typ, strings.Join(programs, ", "), noun, strings.Join(quoted, " "))
}

// toolInstalled tells whether program can be run. git looks for its
// "git-<name>" commands in its exec path before PATH, and installs most
// of them only there.
func toolInstalled(ctx context.Context, program string) bool {
	if _, err := exec.LookPath(program); err == nil {
		return true
	}
	if !strings.HasPrefix(program, "git-") {
		return false
	}
	out, err := exec.CommandContext(ctx, "git", "--exec-path").Output()
	if err != nil {
		return false
	}
	fi, err := os.Stat(filepath.Join(strings.TrimSpace(string(out)), program))
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// runTool runs a converter's program in dir with env. Both its standard
// output and standard error go to the job's output as they come: the
// converters report their progress on either, and a conversion can run
// for hours. A failure's error carries the program's last line.
func (j *job) runTool(ctx context.Context, dir string, env []string, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = env
	tail := &tailWriter{max: 2048}
	out := &redactingWriter{w: j.out}
	// One writer for both streams, so that exec writes to it from one
	// goroutine at a time.
	w := io.MultiWriter(out, tail)
	cmd.Stdout = w
	cmd.Stderr = w
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	out.Flush()
	return toolError(err, tail, name, args)
}

// toolError describes the failure of a converter's program, with the
// line of its output that says what went wrong.
func toolError(err error, tail *tailWriter, name string, args []string) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, exec.ErrNotFound) {
		return fmt.Errorf("%s is not installed: %w", name, err)
	}
	what := name
	if len(args) > 0 {
		what += " " + args[0]
	}
	if msg := strings.TrimSpace(tail.String()); msg != "" {
		return &outputError{fmt.Errorf("%s: %w: %s", what, err, redact.URLs(errorLine(msg))), redact.URLs(msg)}
	}
	return fmt.Errorf("%s: %w", what, err)
}

// errorLine picks from a program's last lines of output the one that says
// what went wrong: the last line with an "error:" or "fatal:", or else the
// last line. Some converters end with a paragraph of advice after the
// error, such as brz after an internal error. git's refusal of a
// repository that another user owns comes before a line that says only
// that the remote could not be read, so it is looked for first.
func errorLine(msg string) string {
	lines := strings.FieldsFunc(msg, func(r rune) bool { return r == '\n' || r == '\r' })
	for _, l := range lines {
		if strings.Contains(l, dubiousOwnership) {
			return strings.TrimSpace(l)
		}
	}
	for i := len(lines) - 1; i >= 0; i-- {
		lower := strings.ToLower(lines[i])
		if strings.Contains(lower, "error:") || strings.Contains(lower, "fatal:") {
			return strings.TrimSpace(lines[i])
		}
	}
	return lastLine(msg)
}

// converterDir returns the directory in which the converter called kind
// keeps its state for this spec. source names the upstream the state was
// converted from; when the spec names another one, the old state cannot
// be continued and the conversion starts afresh. The mirror keeps its
// refs until the new conversion replaces them.
func (j *job) converterDir(kind, source string) (string, error) {
	dir := filepath.Join(j.dir, kind)
	sourceFile := filepath.Join(dir, "source")
	old, err := os.ReadFile(sourceFile)
	if err == nil && string(old) == source {
		return dir, nil
	}
	if err == nil {
		fmt.Fprintf(j.out, "the spec names another upstream than the %s conversion was made from; converting afresh\n", kind)
	}
	// Whatever is there without a source file was left by a crash while
	// the directory was being made.
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return dir, writeConverterFile(sourceFile, []byte(source))
}

// converterDirOf is converterDir for an upstream whose URL holds
// credentials: source names it without them, and was with them. A
// conversion made when the source file still named was (with the
// credentials, readable by every user of the machine) is continued, and
// its source file rewritten.
func (j *job) converterDirOf(kind, source, was string) (string, error) {
	sourceFile := filepath.Join(j.dir, kind, "source")
	if old, err := os.ReadFile(sourceFile); err == nil && was != source && string(old) == was {
		if err := writeConverterFile(sourceFile, []byte(source)); err != nil {
			return "", err
		}
	}
	return j.converterDir(kind, source)
}

// writeConverterFile replaces name with data, so that a crash leaves either
// the old or the new content.
func writeConverterFile(name string, data []byte) error {
	return atomicfile.WriteFile(name, data, 0o644)
}

// initConverterRepo makes a bare repository at dir for a converter to
// fill, unless one is there, and has setup (if not nil) prepare it. It is
// made under another name and renamed when ready, so that a crash never
// leaves a repository that the converter cannot use.
func (j *job) initConverterRepo(ctx context.Context, dir string, setup func(tmp string) error) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	tmp := dir + ".new"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if _, err := j.gitIn(ctx, "", "init", "--quiet", "--bare", tmp); err != nil {
		return err
	}
	if setup != nil {
		if err := setup(tmp); err != nil {
			return err
		}
	}
	return os.Rename(tmp, dir)
}

// takeConverted fetches refs of a converter's repository into the mirror
// with refspecs, all of them or none. It returns what lorry pushes of a
// converted mirror: every branch and tag, without deleting downstream
// what upstream deleted, since converters keep the refs of what is gone.
func (j *job) takeConverted(ctx context.Context, from string, refspecs ...string) ([]string, bool, error) {
	if len(refspecs) == 0 {
		return nil, false, errors.New("the conversion made no branches or tags")
	}
	args := []string{"fetch", "--atomic", "--no-tags", "--no-write-fetch-head"}
	if j.opts.Verbose {
		args = append(args, "--progress")
	} else {
		// The converter has shown its progress; copying what it made
		// is quick beside it.
		args = append(args, "--quiet")
	}
	args = append(args, from)
	args = append(args, refspecs...)
	if _, err := j.git(ctx, args...); err != nil {
		return nil, false, fmt.Errorf("take the converted refs into the mirror: %w", err)
	}
	return allRefs, false, nil
}

// converterRefs lists the refs of a converter's repository under prefix.
func (j *job) converterRefs(ctx context.Context, gitDir, prefix string) ([]string, error) {
	out, err := j.gitIn(ctx, gitDir, "for-each-ref", "--format=%(refname)", prefix)
	if err != nil {
		return nil, err
	}
	return strings.Fields(out), nil
}

// redactingWriter passes what converters print on to w a line at a time,
// with the credentials of URLs hidden: converters print the URLs they
// were given, user and password included, and the job's output is shown
// to whoever looks at the job.
type redactingWriter struct {
	w    io.Writer
	line []byte
}

// maxLine is how much of a line without an end is held back.
const maxLine = 64 << 10

func (r *redactingWriter) Write(p []byte) (int, error) {
	r.line = append(r.line, p...)
	for {
		// Progress meters end their lines with a carriage return.
		i := bytes.IndexAny(r.line, "\r\n")
		if i < 0 {
			break
		}
		if _, err := io.WriteString(r.w, redact.URLs(string(r.line[:i+1]))); err != nil {
			return 0, err
		}
		r.line = r.line[i+1:]
	}
	if len(r.line) > maxLine {
		if err := r.Flush(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Flush writes what is held back of a line without an end.
func (r *redactingWriter) Flush() error {
	if len(r.line) == 0 {
		return nil
	}
	_, err := io.WriteString(r.w, redact.URLs(string(r.line)))
	r.line = nil
	return err
}
