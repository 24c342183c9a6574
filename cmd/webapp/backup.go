package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"lorrycontroller.dev/lc/statedb"
	"lorrycontroller.dev/lc/webappconf"
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
runs and hands out jobs, then check the copy and print what was written.
The copy is the database as one commit left it, readable by its owner
only. A SQLite state database is copied as a SQLite file, checked with
PRAGMA integrity_check; a WEBAPP started on it ends as lost the jobs it
shows running. A PostgreSQL one is dumped with pg_dump in its custom
format, read back whole with pg_restore, and restored with pg_restore
(docs/operations.md, "Backups and restore"), at --backup-statedb when
--statedb goes through a pooler such as pgbouncer.

Flags:
`)
		fs.PrintDefaults()
	}
	stateDB := fs.String("statedb", "", "`path` of the state database, or its postgres:// URL; default: statedb of the --config file")
	passwordFile := fs.String("statedb-password-file", "", "`file` of a PostgreSQL state database's password; default: statedb-password-file of the --config file, else PGPASSFILE")
	backupStateDB := fs.String("backup-statedb", "", "postgres:// `url` of the PostgreSQL state database on its server itself, for pg_dump when --statedb goes through a pooler; default: backup-statedb of the --config file, else --statedb")
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
	var extra []string
	if *backupStateDB != "" {
		extra = []string{"--backup-statedb", *backupStateDB}
	}
	cfg, password, err := stateDBOf(*stateDB, *passwordFile, *configFile, stderr, extra...)
	if err != nil {
		return fail(2, "%v", err)
	}
	src := cfg.StateDB
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := statedb.Backup(ctx, src, cfg.BackupStateDB, password, file, time.Now().Unix())
	if err != nil {
		return fail(1, "%v", err)
	}
	fmt.Fprintf(stdout, "file: %s\nsize: %d\nschema_version: %d\nintegrity: %s\n", res.File, res.Size, res.SchemaVersion, res.Integrity)
	return 0
}

// makeBackupDir makes --backup-directory at start, the service user's
// alone as the backups are, so that a backup never fails for want of it
// and a directory that cannot be made stops the start.
func makeBackupDir(cfg webappconf.Config) error {
	if cfg.BackupDirectory == "" {
		return nil
	}
	if err := os.MkdirAll(cfg.BackupDirectory, 0o700); err != nil {
		return fmt.Errorf("--backup-directory: %w", err)
	}
	return nil
}
