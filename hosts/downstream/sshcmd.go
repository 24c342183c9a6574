package downstream

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"lorrycontroller.dev/lc/proc"
	"lorrycontroller.dev/lc/redact"
)

// downstreamSSH runs the commands of a git server's ssh interface, such as
// Gerrit's "gerrit create-project" or Gitano's "create".
type downstreamSSH struct {
	program string
	user    string
	host    string
	port    int // 0: ssh's default
	timeout time.Duration
}

func newDownstreamSSH(cfg Config) downstreamSSH {
	return downstreamSSH{
		program: cfg.SSHCommand,
		user:    cfg.SSHUser,
		host:    cfg.Host,
		port:    cfg.SSHPort,
		timeout: cfg.Timeout,
	}
}

// sshKillGrace is how long ssh has after SIGTERM, when it overruns its
// timeout, before it is killed.
const sshKillGrace = 2 * time.Second

// sshArgPattern is what a remote argument may look like. The server's
// command line parser (not a shell, but with quoting rules of its own)
// splits what ssh sends at spaces, so anything that would need quoting is
// refused rather than quoted.
var sshArgPattern = regexp.MustCompile(`^[A-Za-z0-9_.+/-]+$`)

// checkSSHPath refuses a lorry path that cannot be passed to a server's
// ssh command as one plain argument.
func checkSSHPath(path string) error {
	if _, err := splitDownstreamPath(path, 1); err != nil {
		return err
	}
	if !sshArgPattern.MatchString(path) || strings.HasPrefix(path, "-") {
		return fmt.Errorf("downstream path %q cannot be given to an ssh command: only letters, digits, \"_\", \".\", \"+\", \"-\" and \"/\" are passed, and no leading \"-\"", path)
	}
	return nil
}

// run runs the remote command in batch mode, so that ssh never waits for
// a password or a host key answer, and kills it after the timeout.
func (s downstreamSSH) run(ctx context.Context, remote ...string) (stdout string, err error) {
	timeout := s.timeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	connect := int(timeout.Seconds())
	if connect < 1 {
		connect = 1
	}
	args := []string{"-o", "BatchMode=yes", "-o", "ConnectTimeout=" + strconv.Itoa(connect)}
	if s.port != 0 {
		args = append(args, "-p", strconv.Itoa(s.port))
	}
	// "--" ends ssh's options: nothing after it is read as one.
	args = append(args, "--", s.dest())
	args = append(args, remote...)
	sshErr := &downstreamSSHError{dest: s.dest(), command: strings.Join(remote, " "), exit: -1}

	p, err := proc.Start(proc.Command{Name: s.program, Args: args})
	if err != nil {
		sshErr.err = err
		return "", sshErr
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-p.Done():
	case <-timer.C:
		sshErr.err = fmt.Errorf("timed out after %s", timeout)
		p.Kill(sshKillGrace)
	case <-ctx.Done():
		sshErr.err = ctx.Err()
		p.Kill(sshKillGrace)
	}
	exit := p.Wait()
	out, errOut := p.NewOutput()
	if sshErr.err != nil || exit != 0 {
		sshErr.exit = exit
		sshErr.stderr = string(errOut)
		return string(out), sshErr
	}
	return string(out), nil
}

// dest is ssh's destination, user@host.
func (s downstreamSSH) dest() string {
	return s.user + "@" + s.host
}

// pushURL is the ssh URL of path on this server.
func (s downstreamSSH) pushURL(path string) string {
	host := s.host
	if s.port != 0 {
		host += ":" + strconv.Itoa(s.port)
	}
	return "ssh://" + s.user + "@" + host + "/" + path + ".git"
}

// downstreamSSHError is a remote command that failed, with what it said.
type downstreamSSHError struct {
	dest    string
	command string
	exit    int   // -1 when it did not finish
	err     error // why it did not finish, if so
	stderr  string
}

func (e *downstreamSSHError) Error() string {
	s := "ssh " + e.dest + " " + e.command + ": "
	switch {
	case e.err != nil:
		s += e.err.Error()
	case e.exit == 255:
		// ssh's own failure: no connection, or refused authentication.
		s += "ssh failed (exit 255)"
	default:
		s += "exit status " + strconv.Itoa(e.exit)
	}
	if msg := shortMessage(e.stderr); msg != "" {
		s += ": " + msg
	}
	return redact.URLs(s)
}

func (e *downstreamSSHError) Unwrap() error { return e.err }

// sshAlreadyExists reports whether the remote command failed only because
// what it creates is there already. ssh's own failures (exit 255) never
// count, whatever they print.
func sshAlreadyExists(err error) bool {
	var e *downstreamSSHError
	if !errors.As(err, &e) || e.err != nil || e.exit == 255 {
		return false
	}
	return strings.Contains(strings.ToLower(e.stderr), "already exists")
}

// knownPaths remembers the repositories a downstream has made or found, so
// that handing out every job does not cost an ssh round trip. A repository
// deleted on the server meanwhile fails that job's push; a restart of the
// WEBAPP forgets.
type knownPaths struct {
	m sync.Map
}

func (k *knownPaths) has(path string) bool {
	_, ok := k.m.Load(path)
	return ok
}

func (k *knownPaths) add(path string) { k.m.Store(path, true) }
