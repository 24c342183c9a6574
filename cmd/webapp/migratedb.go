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
	"text/tabwriter"

	"lorrycontroller.dev/lc/secretfile"
	"lorrycontroller.dev/lc/statedb"
)

// migrateStatedbMain is "lorry-controller-webapp migrate-statedb": it
// copies a stopped WEBAPP's SQLite state database into an empty
// PostgreSQL database, for WEBAPPs to share. It returns the exit code: 0
// for success, 1 for a failure, 2 for bad usage.
func migrateStatedbMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("lorry-controller-webapp migrate-statedb", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: lorry-controller-webapp migrate-statedb --from PATH --to postgres://USER@HOST/DB [flags]

Copy the SQLite state database at PATH, every table of it, into the
PostgreSQL database, which is migrated first and must then be empty.
Stop the WEBAPP first: a database that is open elsewhere is refused. Its
schema must be this version's: start this version's WEBAPP on it once
if it is older. The password is read from --statedb-password-file, or
from the password file of libpq (PGPASSFILE, ~/.pgpass); never give it
in the address. A line is printed for each table, and the row counts of
both databases at the end, which must match.

Flags:
`)
		fs.PrintDefaults()
	}
	from := fs.String("from", "", "`path` of the SQLite state database")
	to := fs.String("to", "", "postgres:// `url` of the PostgreSQL database, without a password")
	passwordFile := fs.String("statedb-password-file", "", "`file` of the PostgreSQL database's password")
	fail := func(code int, format string, args ...any) int {
		fmt.Fprintf(stderr, "lorry-controller-webapp migrate-statedb: "+format+"\n", args...)
		return code
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 || *from == "" || *to == "" {
		fs.Usage()
		return 2
	}
	if err := checkTargetURL(*to); err != nil {
		return fail(2, "--to %s: %v", statedb.Redact(*to), err)
	}
	if err := statedb.CheckCopySource(*from); err != nil {
		return fail(2, "--from %s: %v", statedb.Redact(*from), err)
	}
	var password string
	if *passwordFile != "" {
		var warning string
		var err error
		if password, warning, err = secretfile.Read(*passwordFile); err != nil {
			return fail(2, "--statedb-password-file: %v", err)
		}
		if warning != "" {
			fmt.Fprintf(stderr, "lorry-controller-webapp migrate-statedb: warning: %s\n", warning)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(stdout, "copying %s to %s\n", *from, statedb.Redact(*to))
	counts, err := statedb.CopyToPostgres(ctx, *from, *to, statedb.CopyOptions{Password: password, Progress: stdout})
	if counts != nil {
		printCounts(stdout, counts)
	}
	if err != nil {
		return fail(1, "%v", err)
	}
	fmt.Fprintf(stdout, "copied: start the WEBAPPs with --statedb %s\n", statedb.Redact(*to))
	return 0
}

// checkTargetURL refuses an address that is not PostgreSQL's or that
// holds a password or another secret, which would be seen in the list of
// processes.
func checkTargetURL(to string) error {
	if err := statedb.CheckCopyTarget(to); err != nil {
		return err
	}
	if statedb.HoldsSecret(to) {
		return errors.New("want no password or other credential in the address: give the password in --statedb-password-file or a PGPASSFILE (a literal @ in a parameter is written %40)")
	}
	return nil
}

// printCounts shows the rows of each table in both databases.
func printCounts(w io.Writer, counts []statedb.TableCount) {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "table\tSQLite\tPostgreSQL")
	for _, c := range counts {
		fmt.Fprintf(tw, "%s\t%d\t%d\n", c.Table, c.SQLite, c.Target)
	}
	tw.Flush()
}
