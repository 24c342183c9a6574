package dbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// srv is a PostgreSQL server the tests may create databases on.
type srv struct {
	mu    sync.Mutex
	admin *pgx.Conn
	base  *url.URL
	// template is the database each test's is copied from, "" for an
	// empty one.
	template string
	// ready holds databases made ahead, while tests run; made counts
	// the names, and drops are the drops under way.
	ready chan string
	errs  chan error
	quit  chan struct{}
	ahead chan struct{} // closed when makeAhead returns
	made  int
	drops sync.WaitGroup
	// through is the pgbouncer that the tests reach the server through,
	// if any; the databases are made and dropped directly.
	through *pgbouncer
}

// prefetch is how many databases are made ahead of the tests.
const prefetch = 2

// start makes the template, if the tests prepare one, and starts making
// databases ahead.
func (s *srv) start() error {
	if prepare != nil {
		s.template = fmt.Sprintf("lc_template_%d", os.Getpid())
		if err := s.exec(context.Background(), `CREATE DATABASE `+s.template); err != nil {
			return err
		}
		// Directly: pgbouncer would keep server sessions on the
		// template, which CREATE DATABASE refuses to copy then.
		if err := prepare(context.Background(), s.direct(s.template)); err != nil {
			return fmt.Errorf("prepare the template database: %w", err)
		}
	}
	s.ready, s.errs = make(chan string, prefetch), make(chan error, 1)
	s.quit, s.ahead = make(chan struct{}), make(chan struct{})
	go s.makeAhead()
	return nil
}

func (s *srv) makeAhead() {
	defer close(s.ahead)
	for {
		name, err := s.create()
		if err != nil {
			s.errs <- err
			return
		}
		select {
		case s.ready <- name:
		case <-s.quit:
			s.drop(name)
			return
		}
	}
}

// create makes a new database.
func (s *srv) create() (string, error) {
	s.mu.Lock()
	s.made++
	name := fmt.Sprintf("lc_test_%d_%d", os.Getpid(), s.made)
	s.mu.Unlock()
	q := `CREATE DATABASE ` + name + ` STRATEGY FILE_COPY`
	if s.template != "" {
		q += ` TEMPLATE ` + s.template
	}
	return name, s.exec(context.Background(), q)
}

// take is a new database, made ahead if one is ready.
func (s *srv) take() (string, error) {
	select {
	case name := <-s.ready:
		return name, nil
	case err := <-s.errs:
		s.errs <- err
		return "", err
	}
}

// drop drops database name, in the background.
func (s *srv) drop(name string) {
	s.drops.Add(1)
	go func() {
		defer s.drops.Done()
		s.exec(context.Background(), `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`)
	}()
}

func (s *srv) exec(ctx context.Context, sql string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := s.admin.Exec(ctx, sql)
	return err
}

// passwordRole makes a role that logs in with a random password, a
// member of the server's own role that takes it on at login.
func (s *srv) passwordRole() (role, password string, err error) {
	s.mu.Lock()
	s.made++
	role = fmt.Sprintf("lc_pw_%d_%d", os.Getpid(), s.made)
	s.mu.Unlock()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", "", err
	}
	password = hex.EncodeToString(b)
	admin := pgx.Identifier{s.base.User.Username()}.Sanitize()
	err = s.exec(context.Background(), `CREATE ROLE `+role+` LOGIN PASSWORD '`+password+`' IN ROLE `+admin+`;
		ALTER ROLE `+role+` SET role = `+admin)
	return role, password, err
}

// url is the address of database name on the server, through
// pgbouncer if the tests run through it.
func (s *srv) url(name string) string {
	if s.through != nil {
		return s.through.url(name)
	}
	return s.direct(name)
}

// direct is the address of database name on the server itself.
func (s *srv) direct(name string) string {
	u := *s.base
	u.Path = "/" + name
	return u.String()
}

var (
	once    sync.Once
	theSrv  *srv
	srvErr  error
	private *cluster
	bouncer *pgbouncer

	poolerOnce sync.Once
	poolerErr  error
)

func server() (*srv, error) {
	once.Do(func() {
		addr := os.Getenv(EnvServer)
		if addr == "" {
			if private, srvErr = startCluster(); srvErr != nil {
				return
			}
			addr = private.url()
		}
		if theSrv, srvErr = connect(addr); srvErr != nil {
			return
		}
		if Bouncer() {
			if bouncer, srvErr = startPgBouncer(theSrv.base); srvErr != nil {
				return
			}
			theSrv.through = bouncer
		}
		srvErr = theSrv.start()
	})
	return theSrv, srvErr
}

// pooler is the pgbouncer in front of the server, started if the tests
// do not run through one.
func (s *srv) pooler() (*pgbouncer, error) {
	if s.through != nil {
		return s.through, nil
	}
	poolerOnce.Do(func() {
		bouncer, poolerErr = startPgBouncer(s.base)
	})
	return bouncer, poolerErr
}

func connect(addr string) (*srv, error) {
	base, err := url.Parse(addr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvServer, err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		conn, err := pgx.Connect(context.Background(), addr)
		if err == nil {
			return &srv{admin: conn, base: base}, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("connect: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// binDir is where initdb and postgres are: on PATH, or in the newest
// version's directory of Debian's postgresql package.
func binDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi < vj
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
			return dirs[i], nil
		}
	}
	return "", errors.New("initdb not found: install the postgresql package (make deps), or set " + EnvServer)
}

// cluster is a private throwaway cluster in a temporary directory, its
// server listening only on a unix socket there.
type cluster struct {
	dir  string
	bin  string
	cred *syscall.Credential
	proc *exec.Cmd
	done <-chan struct{} // closed when proc has exited
}

// startCluster makes a cluster in a new temporary directory and starts
// its server.
func startCluster() (*cluster, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	// The socket's path must be short: the temporary directory, not a
	// test's.
	dir, err := os.MkdirTemp("", "lcpg")
	if err != nil {
		return nil, err
	}
	c := &cluster{dir: dir, bin: bin}
	if c.cred, err = runAs(dir); err != nil {
		c.remove()
		return nil, err
	}
	initdb := exec.Command(filepath.Join(bin, "initdb"), "--pgdata", c.data(), "--username", "lc",
		"--auth", "trust", "--encoding", "UTF8", "--locale", "C", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		c.remove()
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	// The tests' own role is trusted; any other logs in with its
	// password, as a server of an installation asks (PasswordDatabase).
	hba := "local all lc trust\nlocal all all scram-sha-256\n"
	hbaFile := filepath.Join(c.data(), "pg_hba.conf")
	if err := os.WriteFile(hbaFile, []byte(hba), 0o600); err != nil {
		c.remove()
		return nil, err
	}
	if c.cred != nil {
		if err := os.Chown(hbaFile, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
			c.remove()
			return nil, err
		}
	}
	if err := c.start(); err != nil {
		c.remove()
		return nil, err
	}
	return c, nil
}

func (c *cluster) data() string { return filepath.Join(c.dir, "data") }

// start starts the cluster's server, which has stopped or never ran.
func (c *cluster) start() error {
	pg := exec.Command(filepath.Join(c.bin, "postgres"), "-D", c.data(), "-k", c.dir,
		"-c", "listen_addresses=", "-c", "fsync=off", "-c", "synchronous_commit=off",
		"-c", "full_page_writes=off", "-c", "max_connections=500",
		"-c", "shared_buffers=64MB", "-c", "log_min_messages=fatal")
	// The server dies with the test binary, should Main not stop it.
	pg.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred, Pdeathsig: syscall.SIGQUIT, Setpgid: true}
	log, err := os.OpenFile(filepath.Join(c.dir, "postgres.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	pg.Stdout, pg.Stderr = log, log
	done, err := startHeld(pg)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	c.proc, c.done = pg, done
	return nil
}

// startHeld starts cmd, whose parent-death signal is set, from a goroutine
// locked to its thread until cmd exits, and closes done then. Linux sends
// the signal when the thread that forked the child ends, not the process,
// and the Go runtime ends the thread of any goroutine that exits locked to
// it (a umask's, a user's): forked from an arbitrary goroutine, the child
// could be killed whenever another goroutine came to end that thread.
func startHeld(cmd *exec.Cmd) (done <-chan struct{}, err error) {
	started := make(chan error, 1)
	exited := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		cmd.Wait()
		close(exited)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return exited, nil
}

// stop stops the cluster's server with a fast shutdown: its sessions'
// transactions are rolled back and their connections closed.
func (c *cluster) stop() {
	if c.proc == nil {
		return
	}
	c.proc.Process.Signal(syscall.SIGINT)
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		c.proc.Process.Kill()
		<-c.done
	}
	c.proc = nil
}

// remove stops the server and removes the cluster.
func (c *cluster) remove() {
	c.stop()
	os.RemoveAll(c.dir)
}

// url is the address of the cluster's maintenance database.
func (c *cluster) url() string {
	return (&url.URL{Scheme: "postgres", User: url.User("lc"), Path: "/postgres",
		RawQuery: url.Values{"host": {c.dir}}.Encode()}).String()
}

// runAs is who runs the cluster: this process's user, or, as root (which
// PostgreSQL refuses to run as), nobody, given the directory.
func runAs(dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		return nil, fmt.Errorf("running as root, and no unprivileged user to run PostgreSQL as: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func stopServer() {
	removeSQLiteTemplate()
	if s := theSrv; s != nil {
		close(s.quit)
		<-s.ahead
		for len(s.ready) > 0 {
			s.drop(<-s.ready)
		}
		s.drops.Wait()
		if s.template != "" {
			s.exec(context.Background(), `DROP DATABASE IF EXISTS `+s.template+` WITH (FORCE)`)
		}
		s.admin.Close(context.Background())
	}
	if bouncer != nil {
		bouncer.stop()
	}
	if private != nil {
		private.remove()
	}
}
