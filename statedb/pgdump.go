package statedb

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Backups of a PostgreSQL STATEDB are pg_dump's, in its custom format,
// which pg_restore reads (docs/operations.md, "Backups and restore").
// pg_dump reads the database in one transaction of its own, so the dump is
// the database as one commit left it, and the WEBAPPs go on beside it. As
// a SQLite backup is, the dump is written under a temporary name in the
// directory of the backup, read back whole with pg_restore, flushed to
// disk, and only then given its name, which it never takes from a file
// already there.
//
// pg_dump, as pg_restore does, sets its session's settings outside its
// transactions (search_path to '', to begin with). Through a pooler in
// transaction mode those settings stay on the server session that served
// that statement, which the pooler hands to another client next (a
// WEBAPP, whose every unqualified name then fails to resolve), and
// pg_dump's own transaction may run on another server session, without
// them. So pg_dump reaches the server itself: at the STATEDB's address,
// or, when that goes through a pooler, at the address the operator gives
// for backups (DumpAddress).
//
// The password never reaches a command line, where every user of the
// machine could read it: pg_dump gets the address without it, and the
// password in its environment (PGPASSWORD), which only its user can read.

// pgKeywords are libpq's connection parameters that an address may carry
// to pg_dump. The others are pgx's own (default_query_exec_mode, say),
// which libpq refuses, and the secrets, which go elsewhere or nowhere.
var pgKeywords = map[string]bool{"host": true, "hostaddr": true, "port": true, "dbname": true, "user": true,
	"passfile": true, "channel_binding": true, "connect_timeout": true, "client_encoding": true, "options": true,
	"application_name": true, "fallback_application_name": true, "keepalives": true, "keepalives_idle": true,
	"keepalives_interval": true, "keepalives_count": true, "tcp_user_timeout": true, "sslmode": true,
	"sslcert": true, "sslkey": true, "sslrootcert": true, "sslcrl": true, "sslcrldir": true, "sslsni": true,
	"requirepeer": true, "ssl_min_protocol_version": true, "ssl_max_protocol_version": true, "gssencmode": true,
	"krbsrvname": true, "gsslib": true, "service": true, "target_session_attrs": true, "load_balance_hosts": true}

// dumpTarget is the address pg_dump is given, with no password in it,
// and the password, from the address if password is "".
func dumpTarget(addr, password string) (target, pass string, err error) {
	if !IsPostgres(addr) {
		return "", "", fmt.Errorf("%s is not a PostgreSQL address: %w", Redact(addr), ErrInvalid)
	}
	if pgSchemeLen(addr) == 0 {
		return dumpKeywords(addr, password)
	}
	u, err := url.Parse(pgConnString(addr))
	if err != nil {
		return "", "", fmt.Errorf("%s is not a PostgreSQL address: %w", Redact(addr), ErrInvalid)
	}
	pass = password
	if u.User != nil {
		if p, ok := u.User.Password(); ok && pass == "" {
			pass = p
		}
		u.User = url.User(u.User.Username())
	}
	q := u.Query()
	if p := q.Get("password"); p != "" && pass == "" {
		pass = p
	}
	for k := range q {
		if !pgKeywords[k] {
			q.Del(k)
		}
	}
	u.RawQuery = q.Encode()
	return u.String(), pass, nil
}

// ErrBackupThroughPooler is DumpAddress's error for a STATEDB reached
// through a pooler, with no other address to back it up from.
var ErrBackupThroughPooler = fmt.Errorf("the state database's address names default_query_exec_mode, as one through a pooler in transaction mode does, "+
	"through which pg_dump's session settings would reach the WEBAPPs' transactions: set backup-statedb to the address of the database "+
	"on its PostgreSQL server itself (docs/operations.md, \"Behind pgbouncer\"): %w", ErrConflict)

// DumpAddress is the address at which pg_dump reaches the PostgreSQL
// STATEDB at addr: backup, the address of the database on its server
// itself, if given, else addr, unless addr says that it goes through a
// pooler in transaction mode (a default_query_exec_mode that prepares
// nothing, see unprepared): then ErrBackupThroughPooler.
func DumpAddress(addr, backup string) (string, error) {
	if backup != "" {
		if !IsPostgres(backup) {
			return "", fmt.Errorf("backup-statedb %s is not a PostgreSQL address: %w", Redact(backup), ErrInvalid)
		}
		return backup, nil
	}
	cfg, err := pgx.ParseConfig(pgConnString(addr))
	if err != nil {
		// pgx's message may quote the address.
		return "", fmt.Errorf("%s is not a PostgreSQL address: %w", Redact(addr), ErrInvalid)
	}
	if unprepared(cfg) {
		return "", ErrBackupThroughPooler
	}
	return addr, nil
}

// dumpKeywords is dumpTarget of an address in the keyword form.
func dumpKeywords(addr, password string) (target, pass string, err error) {
	pairs, err := pgKeywordPairs(addr)
	if err != nil {
		return "", "", fmt.Errorf("%s is not a PostgreSQL address: %w", Redact(addr), ErrInvalid)
	}
	pass = password
	var kept []string
	for _, p := range pairs {
		if p.key == "password" && pass == "" {
			pass = p.value
		}
		if pgKeywords[p.key] {
			kept = append(kept, p.key+"="+pgQuote(p.value))
		}
	}
	return strings.Join(kept, " "), pass, nil
}

// BackupPostgres is Backup of the PostgreSQL database at addr, which
// pg_dump reaches (DumpAddress), its password being password if not in
// addr or libpq's password file; see above. now is the time to record as the time of the backup.
func BackupPostgres(ctx context.Context, addr, password, file string, now int64) (BackupResult, error) {
	res := BackupResult{File: file, Taken: now}
	fail := func(err error) (BackupResult, error) {
		return res, fmt.Errorf("back up %s to %s: %w", Redact(addr), file, err)
	}
	target, pass, err := dumpTarget(addr, password)
	if err != nil {
		return fail(err)
	}
	if _, err := os.Lstat(file); err == nil {
		return fail(fmt.Errorf("%s exists; a backup never replaces a file: %w", file, ErrConflict))
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fail(err)
	}
	// pg_dump writes into the empty file, keeping its mode: the dump
	// holds what the database does.
	tmpName, err := emptyBeside(file)
	if err != nil {
		return fail(err)
	}
	defer os.Remove(tmpName)
	env := dumpEnv(pass)
	if err := runTool(ctx, env, nil, "pg_dump", "--format=custom", "--no-password", "--file="+tmpName, "--dbname="+target); err != nil {
		return fail(err)
	}
	if res.SchemaVersion, err = CheckDump(ctx, tmpName); err != nil {
		return fail(err)
	}
	res.Integrity = "ok"
	if err := publish(tmpName, file); err != nil {
		return fail(err)
	}
	info, err := os.Stat(file)
	if err != nil {
		return fail(err)
	}
	res.Size = info.Size()
	return res, nil
}

// dumpEnv is pg_dump's environment: this process's, with password, if
// any, as PGPASSWORD.
func dumpEnv(password string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PGPASSWORD=") {
			env = append(env, kv)
		}
	}
	if password != "" {
		env = append(env, "PGPASSWORD="+password)
	}
	return env
}

// CheckDump reads the dump at path whole with pg_restore, as a restore
// would, and returns the schema version it holds.
func CheckDump(ctx context.Context, path string) (version int, err error) {
	found := false
	scan := func(r io.Reader) error {
		// The script pg_restore writes has each table's rows after a COPY
		// line; schema_version has one row, its version.
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		inVersion := false
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "COPY ") && strings.Contains(line, "schema_version (version) FROM stdin"):
				inVersion = true
			case inVersion && !found && line != `\.`:
				if version, err = strconv.Atoi(line); err != nil {
					return fmt.Errorf("the dump's schema_version holds %q", line)
				}
				found = true
			case inVersion:
				inVersion = false
			}
		}
		return sc.Err()
	}
	if err := runTool(ctx, nil, scan, "pg_restore", "--file=-", path); err != nil {
		return 0, fmt.Errorf("read the dump back: %w", err)
	}
	if !found {
		return 0, errors.New("the dump holds no schema version: is the database a state database?")
	}
	return version, nil
}

// toolErrBytes is how much of a tool's standard error its failure quotes.
const toolErrBytes = 4 << 10

// runTool runs a PostgreSQL client program with env (nil: this process's),
// its output read by stdout if given, else discarded. Its failure quotes
// the end of its standard error.
func runTool(ctx context.Context, env []string, stdout func(io.Reader) error, name string, args ...string) error {
	path, err := exec.LookPath(name)
	if err != nil {
		return fmt.Errorf("%s not found: install PostgreSQL's client programs (Debian's postgresql-client): %w", name, err)
	}
	// The tool dies with this process (its parent-death signal), which
	// Linux sends when the thread that forked it ends: the goroutine
	// holds its thread until the tool is waited for, so that no other
	// goroutine can end that thread meanwhile (one that exits locked to
	// it, as a umask's does).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	var stderr tailBuffer
	cmd.Stderr = &stderr
	var out io.ReadCloser
	if stdout != nil {
		if out, err = cmd.StdoutPipe(); err != nil {
			return err
		}
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	var readErr error
	if out != nil {
		readErr = stdout(out)
		io.Copy(io.Discard, out) // the rest, so that it can finish
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("%s: %w: %s", name, err, strings.TrimSpace(stderr.String()))
	}
	return readErr
}

// tailBuffer keeps the last toolErrBytes written to it.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > toolErrBytes {
		t.b = append(t.b[:0], t.b[len(t.b)-toolErrBytes:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.b) }
