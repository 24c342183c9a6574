package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"lorrycontroller.dev/lc/statedb"
)

// backupMain is "lorry-controller-webapp backup": a copy of the state
// database, made beside a running WEBAPP without stopping it, and
// checked. It returns the exit code: 0 for success, 1 for a failure, 2
// for bad usage.
func backupMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("lorry-controller-webapp backup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: lorry-controller-webapp backup [flags] FILE

Copy the state database to FILE, which must not exist, while the WEBAPP
runs and hands out jobs, then check the copy (PRAGMA integrity_check)
and print what was written. The copy is the database as one commit left
it, readable by its owner only. A WEBAPP started on it ends as lost the
jobs it shows running (docs/operations.md, "Backups and restore").
A PostgreSQL state database is backed up with pg_dump: the command
prints the pg_dump command line instead.

Flags:
`)
		fs.PrintDefaults()
	}
	stateDB := fs.String("statedb", "", "`path` of the state database; default: statedb of the --config file")
	configFile := fs.String("config", "", "the WEBAPP's configuration `file`, to find its state database")
	fail := func(code int, format string, args ...any) int {
		fmt.Fprintf(stderr, "lorry-controller-webapp backup: "+format+"\n", args...)
		return code
	}
	// Flags may come before and after the file.
	var operands []string
	for rest := args; ; rest = fs.Args()[1:] {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		operands = append(operands, fs.Arg(0))
	}
	if len(operands) != 1 || operands[0] == "" {
		fs.Usage()
		return 2
	}
	file := operands[0]
	src, err := tokenStateDB(*stateDB, *configFile, stderr)
	if err != nil {
		return fail(2, "%v", err)
	}
	if isPostgres(src) {
		cmd, err := pgDumpCommand(src, file)
		if err != nil {
			return fail(2, "--statedb: %v", err)
		}
		fmt.Fprintln(stderr, "lorry-controller-webapp backup: the state database is PostgreSQL; back it up with pg_dump, giving the password in PGPASSWORD or ~/.pgpass:")
		fmt.Fprintln(stdout, cmd)
		return 0
	}
	res, err := statedb.BackupFile(context.Background(), src, file, time.Now().Unix())
	if err != nil {
		return fail(1, "%v", err)
	}
	fmt.Fprintf(stdout, "file: %s\nsize: %d\nschema_version: %d\nintegrity: %s\n", res.File, res.Size, res.SchemaVersion, res.Integrity)
	return 0
}

// isPostgres says whether --statedb names a PostgreSQL database rather
// than a SQLite file.
func isPostgres(stateDB string) bool {
	return strings.HasPrefix(stateDB, "postgres://") || strings.HasPrefix(stateDB, "postgresql://")
}

// pgDumpCommand is the pg_dump command line that backs up the PostgreSQL
// database at dbURL to file, without the password the URL may hold: a
// command line is seen by every user of the machine, and kept in shell
// histories.
func pgDumpCommand(dbURL, file string) (string, error) {
	u, err := url.Parse(dbURL)
	if err != nil {
		return "", errors.New("not a PostgreSQL URL")
	}
	if u.User != nil {
		u.User = url.User(u.User.Username())
	}
	if q := u.Query(); q.Has("password") {
		q.Del("password")
		u.RawQuery = q.Encode()
	}
	quoted := "'" + strings.ReplaceAll(u.String(), "'", `'\''`) + "'"
	return "pg_dump --format=custom --file " + shellQuote(file) + " " + quoted, nil
}

// makeBackupDir makes --backup-directory at start, the service user's
// alone as the backups are, so that a backup never fails for want of it
// and a directory that cannot be made stops the start. A PostgreSQL state
// database is backed up with pg_dump, not by the WEBAPP.
func makeBackupDir(cfg Config) error {
	if cfg.BackupDirectory == "" {
		return nil
	}
	if isPostgres(cfg.StateDB) {
		return errors.New("--backup-directory: the WEBAPP backs up a SQLite state database only; back up PostgreSQL with pg_dump (lorry-controller-webapp backup prints the command)")
	}
	if err := os.MkdirAll(cfg.BackupDirectory, 0o700); err != nil {
		return fmt.Errorf("--backup-directory: %w", err)
	}
	return nil
}
