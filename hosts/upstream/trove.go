package upstream

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"time"

	"lorrycontroller.dev/lc/confgit"
	"lorrycontroller.dev/lc/redact"
)

// The Trove lister asks Gitano, the git service of a Trove, for the
// output of its "ls" command, the way the original Lorry Controller did.
// Gitano documents its commands through its own help command
// (ssh git@<host> help ls; project pages at https://www.gitano.org.uk/):
//
//   - over ssh: ssh <user>@<host> ls;
//   - over HTTP(S), for hosts behind firewalls that let only the web
//     through: GET <scheme>://<host>/gitano-command.cgi?cmd=ls,
//     Gitano's CGI front end to the same commands, with optional HTTP
//     basic authentication (RFC 7617).
//
// Either answers one line per repository the caller may see: its access
// rights, white space and its path, such as "RW baserock/definitions".
//
// Section keys (decoded by confgit): "auth" ({"username": ..., "password": ...}, for HTTP(S)),
// "ssh-user" (default "git"), "check-certificates".

type troveLister struct {
	host     string
	protocol string
	sshUser  string
	api      *upstreamAPI // nil over ssh
	sshCmd   string
	timeout  time.Duration
	log      *slog.Logger
}

func newTroveLister(h confgit.Host, opts ListerOptions) (Lister, error) {
	user := h.SSHUser
	if user == "" {
		user = "git"
	}
	l := &troveLister{
		host:     h.Name,
		protocol: h.Protocol,
		sshUser:  user,
		sshCmd:   opts.SSHCommand,
		timeout:  opts.RequestTimeout,
		log:      opts.Logger.With("host", h.Name, "type", h.Type),
	}
	if h.Protocol == "ssh" {
		return l, nil
	}
	base, err := url.Parse(h.Protocol + "://" + h.Name)
	if err != nil || base.Host == "" {
		return nil, hostError(h, "host", fmt.Errorf("%q is not a host name", h.Name))
	}
	if l.api, err = newUpstreamAPI(h, opts, base); err != nil {
		return nil, err
	}
	l.api.authKey = "auth"
	if a := h.Auth; a != nil {
		cred := base64.StdEncoding.EncodeToString([]byte(a.Username + ":" + a.Password))
		l.api.setSecret("Authorization", "Basic "+cred, cred, a.Password)
	}
	return l, nil
}

// List runs Gitano's ls and makes a Repo of each line that names a
// repository.
func (l *troveLister) List(ctx context.Context) ([]Repo, error) {
	var out []byte
	var err error
	if l.api != nil {
		out, err = l.lsHTTP(ctx)
	} else {
		out, err = l.lsSSH(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("trove %s: %w", l.host, err)
	}
	paths, malformed := parseGitanoLs(out)
	if len(malformed) > 0 {
		l.log.Warn("skipped lines of gitano ls that name no repository",
			"malformed_lines", len(malformed), "examples", lineExamples(malformed, 5))
	}
	var set repoSet
	for _, p := range paths {
		set.add(Repo{Path: strings.TrimSuffix(p, ".git"), CloneURL: l.cloneURL(p)})
	}
	return set.repos, nil
}

func (l *troveLister) lsHTTP(ctx context.Context) ([]byte, error) {
	defer l.api.done()
	u, err := l.api.endpoint("/gitano-command.cgi", url.Values{"cmd": {"ls"}})
	if err != nil {
		return nil, err
	}
	p, err := l.api.get(ctx, u)
	if err != nil {
		return nil, err
	}
	return p.body, nil
}

// lsSSH runs ssh in batch mode, so that a missing key fails at once
// instead of waiting for a password nobody will type. A port in the host
// name becomes -p, which ssh wants instead of host:port.
func (l *troveLister) lsSSH(ctx context.Context) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	host, port := l.host, ""
	if h, p, err := net.SplitHostPort(l.host); err == nil {
		host, port = h, p
	}
	args := []string{"-o", "BatchMode=yes"}
	if port != "" {
		args = append(args, "-p", port)
	}
	args = append(args, l.sshUser+"@"+host, "ls")
	cmd := exec.CommandContext(ctx, l.sshCmd, args...)
	cmd.Stdin = nil
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &cappedWriter{max: maxListPageSize + 1, buf: &stdout}
	cmd.Stderr = &cappedWriter{max: maxListErrorBody, buf: &stderr}
	// An ssh that leaves a child holding its output open must not hold
	// the listing with it.
	cmd.WaitDelay = 5 * time.Second
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	err := cmd.Run()
	what := strings.Join(append([]string{l.sshCmd}, args...), " ")
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		msg := clipText(strings.Join(strings.Fields(redact.URLs(stderr.String())), " "), 500)
		if msg != "" {
			return nil, fmt.Errorf("%s: %w: %s", what, err, msg)
		}
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if stdout.Len() > maxListPageSize {
		return nil, fmt.Errorf("%s: output is larger than %d bytes", what, maxListPageSize)
	}
	return stdout.Bytes(), nil
}

// cloneURL is where Gitano serves the repository: over ssh as the same
// user the listing used, over HTTP(S) under /git/.
func (l *troveLister) cloneURL(p string) string {
	if l.protocol == "ssh" {
		return (&url.URL{Scheme: "ssh", User: url.User(l.sshUser), Host: l.host, Path: "/" + p}).String()
	}
	return (&url.URL{Scheme: l.protocol, Host: l.host, Path: "/git/" + p}).String()
}

// parseGitanoLs returns the repository paths in Gitano's ls output, and
// the lines that are neither blank nor "<rights> <path>". Rights are made
// of R, W and '-'; a path is a valid relative path.
func parseGitanoLs(out []byte) (paths, malformed []string) {
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 || strings.Trim(f[0], "RW-") != "" || confgit.ValidatePath(f[1]) != nil {
			malformed = append(malformed, line)
			continue
		}
		paths = append(paths, f[1])
	}
	return paths, malformed
}

func lineExamples(lines []string, n int) []string {
	out := make([]string, 0, min(n, len(lines)))
	for _, l := range lines[:min(n, len(lines))] {
		out = append(out, clipText(redact.URLs(l), 100))
	}
	return out
}

// cappedWriter keeps the first max bytes written to it and drops the
// rest, so a chatty ssh cannot fill memory with its errors.
type cappedWriter struct {
	max int
	buf *bytes.Buffer
}

func (b *cappedWriter) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
