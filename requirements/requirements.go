// Package requirements decides whether a runtime's requirements.txt may be
// given to pip. Whoever can push to CONFGIT writes that file, and pip runs
// on the minions with their user's rights: a line naming a file outside the
// runtime's directory (-r /etc/passwd) makes pip fail with that file's text
// in its error, which becomes the job's output, and an index or source
// option would take packages from wherever the pusher likes. Where packages
// come from is the minion's --pip-arg alone.
//
// The file is read the way pip reads it, so that no spelling reaches pip
// that the check did not see: lines ending in a backslash are joined to the
// next, comments start at a '#' at the start of a line or after a space,
// a line is a requirement when its first word does not start with '-',
// and options are split as a shell would split them. What is allowed is
// listed; everything else is refused:
//
//   - a requirement by name, version and environment markers, with --hash
//     options after it;
//   - a relative path that stays in the runtime's directory, as a
//     requirement, or after -r, -c or -e (and their long forms); a file named
//     by -r or -c is checked in turn;
//   - --no-index, --no-binary, --only-binary, --prefer-binary,
//     --require-hashes and --pre, which only narrow what pip takes.
//
// URLs (any "scheme:"), direct references ("name @ url"), absolute paths,
// paths leading out of the directory, "~", environment variables ("${NAME}",
// which pip expands from the minion's environment) and every other option
// (-i, --index-url, --extra-index-url, -f, --find-links, --trusted-host,
// abbreviations of long options, ...) are refused.
package requirements

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"
)

// File is the name of the requirements file at the root of a runtime.
const File = "requirements.txt"

// maxFiles bounds how many files one check reads through -r and -c.
const maxFiles = 100

// Error is a refused line.
type Error struct {
	File   string // slash-separated, relative to the runtime's directory
	Line   int    // 1-based; the first line of a continued line
	Reason string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s line %d: %s", e.File, e.Line, e.Reason)
}

// Check reads File through read, and every file it names with -r or -c,
// and reports the first line that pip must not be given, as an *Error.
// read takes a clean slash-separated path relative to the runtime's
// directory, and returns an error wrapping fs.ErrNotExist when there is no
// such regular file; other errors of read are returned as they are.
func Check(read func(name string) ([]byte, error)) error {
	c := checker{read: read, seen: map[string]bool{}}
	return c.file(File, "", 0)
}

type checker struct {
	read func(string) ([]byte, error)
	seen map[string]bool
}

func (c *checker) file(name, from string, fromLine int) error {
	if c.seen[name] {
		return nil
	}
	if len(c.seen) >= maxFiles {
		return &Error{File: from, Line: fromLine, Reason: fmt.Sprintf("more than %d requirement files", maxFiles)}
	}
	c.seen[name] = true
	data, err := c.read(name)
	if errors.Is(err, fs.ErrNotExist) && from != "" {
		return &Error{File: from, Line: fromLine, Reason: fmt.Sprintf("names %q, which is not a file of the runtime", name)}
	}
	if err != nil {
		return err
	}
	for _, l := range logicalLines(string(data)) {
		includes, reason := checkLine(l.text, path.Dir(name))
		if reason != "" {
			return &Error{File: name, Line: l.number, Reason: reason}
		}
		for _, inc := range includes {
			if err := c.file(inc, name, l.number); err != nil {
				return err
			}
		}
	}
	return nil
}

type line struct {
	number int
	text   string
}

// commentRE is pip's: a '#' at the start or after white space, to the end.
var commentRE = regexp.MustCompile(`(^|\s+)#.*$`)

// logicalLines joins continued lines and drops comments and blank lines,
// as pip does before it parses a line. pip joins without a separator, so
// "-\" and "r x" make "-r x".
func logicalLines(data string) []line {
	data = strings.TrimPrefix(data, "\ufeff")
	var out []line
	var cont []string
	first := 0
	emit := func(n int, s string) {
		s = strings.TrimSpace(commentRE.ReplaceAllString(s, ""))
		if s != "" {
			out = append(out, line{number: n, text: s})
		}
	}
	phys := splitLines(data)
	for i, s := range phys {
		n := i + 1
		isComment := commentRE.MatchString(s) && commentRE.FindStringIndex(s)[0] == 0
		if !strings.HasSuffix(s, `\`) || isComment {
			if isComment {
				s = " " + s
			}
			if cont != nil {
				emit(first, strings.Join(append(cont, s), ""))
				cont = nil
			} else {
				emit(n, s)
			}
			continue
		}
		if cont == nil {
			first = n
			cont = []string{}
		}
		cont = append(cont, strings.Trim(s, `\`))
	}
	if cont != nil {
		emit(first, strings.Join(cont, ""))
	}
	return out
}

// splitLines splits as Python's str.splitlines does, at every line
// boundary it knows, so that no line hides inside another.
func splitLines(s string) []string {
	var out []string
	start := 0
	for i, r := range s {
		switch r {
		case '\n', '\r', '\v', '\f', '\x1c', '\x1d', '\x1e', '\u0085', '\u2028', '\u2029':
			if r == '\n' && i > 0 && s[i-1] == '\r' {
				start = i + 1
				continue
			}
			out = append(out, s[start:i])
			start = i + len(string(r))
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// envRE is what pip replaces with the value of an environment variable.
var envRE = regexp.MustCompile(`\$\{[A-Za-z0-9_]+\}`)

// option is an option pip takes in a requirements file that may be given.
type option struct {
	value bool
	// kind of value: "" for no check, "include" for a file to check in
	// turn, "path" for a project directory or archive.
	kind string
}

// lineOptions may start a line of their own.
var lineOptions = map[string]option{
	"-r": {value: true, kind: "include"}, "--requirement": {value: true, kind: "include"},
	"-c": {value: true, kind: "include"}, "--constraint": {value: true, kind: "include"},
	"-e": {value: true, kind: "path"}, "--editable": {value: true, kind: "path"},
	"--no-index":       {},
	"--no-binary":      {value: true},
	"--only-binary":    {value: true},
	"--prefer-binary":  {},
	"--require-hashes": {},
	"--pre":            {},
}

// requirementOptions may follow a requirement.
var requirementOptions = map[string]option{
	"--hash": {value: true},
}

// checkLine says why one logical line is refused, or which files it
// includes. dir is the directory of the file the line is in: pip finds the
// files of -r and -c beside the file that names them, and everything else
// from the runtime's directory, where it runs.
func checkLine(s, dir string) (includes []string, reason string) {
	if envRE.MatchString(s) {
		return nil, "environment variables are not allowed"
	}
	// pip splits at single spaces: the words before the first one that
	// starts with '-' are the requirement, the rest are options.
	words := strings.Split(s, " ")
	n := 0
	for n < len(words) && !strings.HasPrefix(words[n], "-") {
		n++
	}
	allowed := lineOptions
	if req := strings.Join(words[:n], " "); req != "" {
		if reason := checkRequirement(req); reason != "" {
			return nil, reason
		}
		allowed = requirementOptions
	}
	args, err := shellSplit(strings.Join(words[n:], " "))
	if err != nil {
		return nil, err.Error()
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" {
			return nil, fmt.Sprintf("unexpected %q", a)
		}
		name, value, hasValue := a, "", false
		switch {
		case strings.HasPrefix(a, "--"):
			name, value, hasValue = strings.Cut(a, "=")
		case len(a) > 2:
			// A short option with its value attached: "-rfile", "-r=file"
			// is the value "=file".
			name, value, hasValue = a[:2], a[2:], true
		}
		opt, ok := allowed[name]
		if !ok {
			if len(allowed) == len(requirementOptions) {
				return nil, fmt.Sprintf("option %q is not allowed after a requirement", name)
			}
			return nil, fmt.Sprintf("option %q is not allowed: where packages come from is the minion's to say", name)
		}
		if !opt.value {
			if hasValue {
				return nil, fmt.Sprintf("option %q takes no value", name)
			}
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				return nil, fmt.Sprintf("option %q needs a value", name)
			}
			i++
			value = args[i]
		}
		switch opt.kind {
		case "include":
			p, reason := localPath(value, dir)
			if reason != "" {
				return nil, fmt.Sprintf("%s %s", name, reason)
			}
			includes = append(includes, p)
		case "path":
			if _, reason := localPath(value, "."); reason != "" {
				return nil, fmt.Sprintf("%s %s", name, reason)
			}
		}
	}
	return includes, ""
}

// checkRequirement refuses a requirement that names a URL, a direct
// reference or a path out of the runtime's directory. The markers after
// ';' are checked too: pip splits them off differently for names and for
// URLs, and no marker needs a ':' or an '@'.
func checkRequirement(req string) string {
	if strings.ContainsAny(req, ":@") {
		return fmt.Sprintf("requirement %q: URLs and direct references are not allowed", req)
	}
	spec, _, _ := strings.Cut(req, ";")
	spec = strings.TrimSpace(spec)
	if strings.ContainsAny(spec, `/\`) || strings.HasPrefix(spec, ".") || strings.HasPrefix(spec, "~") {
		if _, reason := localPath(spec, "."); reason != "" {
			return fmt.Sprintf("requirement %s", reason)
		}
	}
	return ""
}

// localPath resolves p against dir, both relative to the runtime's
// directory, and refuses it unless it stays inside.
func localPath(p, dir string) (string, string) {
	switch {
	case p == "":
		return "", "names an empty path"
	case strings.Contains(p, ":"):
		return "", fmt.Sprintf("names %q: URLs are not allowed", p)
	case strings.HasPrefix(p, "/"), strings.HasPrefix(p, `\`):
		return "", fmt.Sprintf("names %q: absolute paths are not allowed", p)
	case strings.HasPrefix(p, "~"):
		return "", fmt.Sprintf("names %q: home directories are not allowed", p)
	case strings.ContainsAny(p, "\\\x00"):
		return "", fmt.Sprintf("names %q: a backslash or NUL is not allowed", p)
	}
	j := path.Join(dir, p)
	if j == ".." || strings.HasPrefix(j, "../") {
		return "", fmt.Sprintf("names %q, outside the runtime's directory", p)
	}
	return j, ""
}

// shellSplit splits s into words as Python's shlex.split does, which is
// how pip splits the options of a line. Quotes and backslashes, which no
// allowed option needs, are refused rather than interpreted.
func shellSplit(s string) ([]string, error) {
	if strings.ContainsAny(s, `'"\`) {
		return nil, errors.New("quotes and backslashes are not allowed in options")
	}
	return strings.FieldsFunc(s, func(r rune) bool {
		return r == ' ' || r == '\t' || r == '\r' || r == '\n'
	}), nil
}
