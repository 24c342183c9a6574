package dbtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgbouncer is a pgbouncer in transaction mode, in front of one server,
// listening on a loopback port: the way many installations share one
// PostgreSQL among many clients. A server connection serves a client for
// one transaction, then another client: nothing of a session outlives
// its transaction (prepared statements, temporary tables, session locks
// and settings).
type pgbouncer struct {
	dir  string
	port int
	user string
	proc *exec.Cmd
	done <-chan struct{} // closed when proc has exited
}

// BouncerQuery is the query of every address the tests are given
// through pgbouncer: pgx may not keep prepared statements on a
// connection whose server changes with each transaction.
const BouncerQuery = "sslmode=disable&default_query_exec_mode=cache_describe"

// pgbouncerBin is where Debian's pgbouncer package puts it, when it is
// not on PATH.
const pgbouncerBin = "/usr/sbin/pgbouncer"

// startPgBouncer starts a pgbouncer in front of the server at base,
// which must let its user in without a password.
func startPgBouncer(base *url.URL) (*pgbouncer, error) {
	bin, host, port, err := pgBouncerTarget(base)
	if err != nil {
		return nil, err
	}
	user := base.User.Username()
	dir, err := os.MkdirTemp("", "lcpgb")
	if err != nil {
		return nil, err
	}
	b := &pgbouncer{dir: dir, user: user}
	cred, err := runAs(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	// A port found free may be taken before pgbouncer binds it: then
	// pgbouncer exits, and another is tried.
	for range 5 {
		if b.port, err = freePort(); err != nil {
			break
		}
		if err = b.start(bin, host, port, cred); err == nil {
			return b, nil
		}
	}
	b.stop()
	return nil, fmt.Errorf("pgbouncer: %w", err)
}

// pgBouncerTarget is the pgbouncer program and the host and port of the
// server at base that it is to stand in front of.
func pgBouncerTarget(base *url.URL) (bin, host, port string, err error) {
	if bin, err = exec.LookPath("pgbouncer"); err != nil {
		if _, serr := os.Stat(pgbouncerBin); serr != nil {
			return "", "", "", errors.New("pgbouncer not found: install the pgbouncer package (make deps)")
		}
		bin = pgbouncerBin
	}
	host, port = base.Query().Get("host"), base.Port()
	if host == "" {
		host = base.Hostname()
	}
	if port == "" {
		port = "5432"
	}
	if base.User.Username() == "" {
		return "", "", "", fmt.Errorf("%s: pgbouncer needs the address's user", base.Redacted())
	}
	return bin, host, port, nil
}

// ini is the configuration of a pgbouncer on port in front of host and
// port: any database, as the client's user, let in without a password
// (auth_type trust still wants the user named in auth_file).
func (b *pgbouncer) ini(host, port string) string {
	return fmt.Sprintf(`[databases]
* = host=%s port=%s

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = transaction
max_client_conn = 5000
default_pool_size = 20
server_login_retry = 1
logfile = %s
`, host, port, b.port, filepath.Join(b.dir, "userlist.txt"), filepath.Join(b.dir, "pgbouncer.log"))
}

func (b *pgbouncer) start(bin, host, port string, cred *syscall.Credential) error {
	ini := filepath.Join(b.dir, "pgbouncer.ini")
	if err := os.WriteFile(ini, []byte(b.ini(host, port)), 0o644); err != nil {
		return err
	}
	users := fmt.Sprintf("%q \"\"\n", b.user)
	if err := os.WriteFile(filepath.Join(b.dir, "userlist.txt"), []byte(users), 0o644); err != nil {
		return err
	}
	cmd := exec.Command(bin, ini)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL, Setpgid: true}
	out, err := os.OpenFile(filepath.Join(b.dir, "stderr.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	done, err := startHeld(cmd)
	if err != nil {
		return err
	}
	b.proc, b.done = cmd, done
	// Ready when it listens on its port, and then answers a query through
	// to the server. Until its log says it listens, the port may be
	// another's, such as another test binary's pgbouncer that took it
	// first, which would answer the query too, for another server.
	deadline := time.Now().Add(30 * time.Second)
	for !b.listening() {
		select {
		case <-b.done:
			b.proc = nil
			log, _ := os.ReadFile(filepath.Join(b.dir, "pgbouncer.log"))
			return fmt.Errorf("pgbouncer exited: %s", strings.TrimSpace(string(log)))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			b.stop()
			return errors.New("pgbouncer does not listen")
		}
	}
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		conn, err := pgx.Connect(ctx, b.url("postgres"))
		if err == nil {
			err = conn.Ping(ctx)
			conn.Close(ctx)
		}
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-b.done:
			b.proc = nil
			log, _ := os.ReadFile(filepath.Join(b.dir, "pgbouncer.log"))
			return fmt.Errorf("pgbouncer exited: %s", strings.TrimSpace(string(log)))
		default:
		}
		if time.Now().After(deadline) {
			b.stop()
			return fmt.Errorf("pgbouncer does not answer: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// listening says whether the running pgbouncer's log says that it
// listens on its port.
func (b *pgbouncer) listening() bool {
	log, _ := os.ReadFile(filepath.Join(b.dir, "pgbouncer.log"))
	return strings.Contains(string(log), fmt.Sprintf("[%d] LOG listening on 127.0.0.1:%d\n", b.proc.Process.Pid, b.port))
}

// url is the address of database name through the pgbouncer.
func (b *pgbouncer) url(name string) string {
	return (&url.URL{Scheme: "postgres", User: url.User(b.user),
		Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(b.port)), Path: "/" + name,
		RawQuery: BouncerQuery}).String()
}

// stop stops the pgbouncer and removes its directory.
func (b *pgbouncer) stop() {
	if b.proc != nil {
		b.proc.Process.Signal(syscall.SIGINT)
		select {
		case <-b.done:
		case <-time.After(10 * time.Second):
			b.proc.Process.Kill()
			<-b.done
		}
		b.proc = nil
	}
	os.RemoveAll(b.dir)
}

// freePort is a loopback port that no one listened on just now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
