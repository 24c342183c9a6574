package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"lorrycontroller.dev/lc/minionname"
	"lorrycontroller.dev/lc/secretfile"
	"lorrycontroller.dev/lc/statedb"
	"lorrycontroller.dev/lc/webappconf"
)

// tokenMain is "lorry-controller-webapp token": it makes, lists and
// revokes the API tokens in the state database, beside a running WEBAPP
// or before the first start. It returns the exit code: 0 for success, 1
// for a failure, 2 for bad usage.
func tokenMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("lorry-controller-webapp token", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: lorry-controller-webapp token create --role admin|minion --name NAME [flags]
       lorry-controller-webapp token list [flags]
       lorry-controller-webapp token revoke [flags] NAME

Manage the tokens that clients send as "Authorization: Bearer TOKEN".
create prints the new token, alone, on standard output: it is shown only
this once, since the database keeps only its hash. A minion token NAME
lets its minions call themselves NAME or NAME-anything. Revoking a token
also signs out the browsers signed in with it. Run it as the WEBAPP's
user, so that a new state database is the WEBAPP's.

Flags:
`)
		fs.PrintDefaults()
	}
	stateDB := fs.String("statedb", "", "`path` of the state database, or its postgres:// URL; default: statedb of the --config file")
	passwordFile := fs.String("statedb-password-file", "", "`file` of a PostgreSQL state database's password; default: statedb-password-file of the --config file, else PGPASSFILE")
	configFile := fs.String("config", "", "the WEBAPP's configuration `file`, to find its state database")
	role := fs.String("role", "", "role of the new token: admin or minion")
	name := fs.String("name", "", "`name` of the new token: a person or the minions' machine")
	fail := func(code int, format string, args ...any) int {
		fmt.Fprintf(stderr, "lorry-controller-webapp token: "+format+"\n", args...)
		return code
	}
	if len(args) == 0 {
		fs.Usage()
		return 2
	}
	verb, rest := args[0], args[1:]
	// Flags may come before and after the arguments.
	var operands []string
	for {
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
		rest = fs.Args()[1:]
	}
	switch {
	case verb == "create" && len(operands) == 0 && *name != "" && *role != "":
	case verb == "list" && len(operands) == 0:
	case verb == "revoke" && len(operands) == 1:
	default:
		fs.Usage()
		return 2
	}
	if verb == "create" && *role == statedb.RoleMinion {
		// Its minions are called NAME or NAME-anything.
		if err := minionname.Check(*name); err != nil {
			return fail(2, "--name: %v", err)
		}
	}

	cfg, password, err := stateDBOf(*stateDB, *passwordFile, *configFile, stderr)
	if err != nil {
		return fail(2, "%v", err)
	}
	path := cfg.StateDB
	if verb != "create" {
		// Only create may make the database: a typo elsewhere should not
		// leave an empty one behind.
		if err := statedb.CheckExists(path); err != nil {
			return fail(1, "state database: %v", err)
		}
	}
	ctx := context.Background()
	opts := statedb.Options{Password: password}
	db, err := statedb.Open(ctx, path, opts)
	if err != nil {
		return fail(1, "%v", err)
	}
	defer db.Close()

	switch verb {
	case "create":
		err = createToken(ctx, db, *name, *role, stdout)
	case "list":
		err = listTokens(ctx, db, stdout)
	case "revoke":
		err = revokeToken(ctx, db, operands[0], stderr)
	}
	if err != nil {
		return fail(1, "%v", err)
	}
	return 0
}

// stateDBOf is the state database that a subcommand's flags name, and
// its password, as the WEBAPP itself takes them: --statedb and
// --statedb-password-file as given, each else the --config file's, else
// the WEBAPP's default. The password is read from its file; without one
// it is "", and libpq's PGPASSFILE may hold it. A warning about the file
// goes to stderr. extra are more of the WEBAPP's flags, given on the
// subcommand's command line.
func stateDBOf(stateDB, passwordFile, configFile string, stderr io.Writer, extra ...string) (cfg webappconf.Config, password string, err error) {
	var args []string
	if configFile != "" {
		args = append(args, "--config", configFile)
	}
	if stateDB != "" {
		args = append(args, "--statedb", stateDB)
	}
	if passwordFile != "" {
		args = append(args, "--statedb-password-file", passwordFile)
	}
	cfg, err = webappconf.Parse(append(args, extra...), stderr)
	if err != nil {
		return cfg, "", err
	}
	if cfg.StateDBPasswordFile != "" {
		var warning string
		if password, warning, err = secretfile.Read(cfg.StateDBPasswordFile); err != nil {
			return cfg, "", fmt.Errorf("--statedb-password-file: %w", err)
		}
		if warning != "" {
			fmt.Fprintln(stderr, "lorry-controller-webapp: warning:", warning)
		}
	}
	return cfg, password, nil
}

// createToken makes a token called name for role, and prints its secret.
func createToken(ctx context.Context, db *statedb.DB, name, role string, stdout io.Writer) error {
	secret, err := statedb.NewToken()
	if err != nil {
		return err
	}
	err = db.Update(ctx, func(tx *statedb.Tx) error {
		return tx.CreateToken(ctx, name, role, statedb.HashSecret(secret))
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, secret)
	return nil
}

// listTokens prints a table of the tokens.
func listTokens(ctx context.Context, db *statedb.DB, stdout io.Writer) error {
	var toks []statedb.Token
	err := db.View(ctx, func(tx *statedb.Tx) error {
		var err error
		toks, err = tx.Tokens(ctx)
		return err
	})
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tROLE\tCREATED\tLAST USED")
	for _, t := range toks {
		used := "never"
		if t.LastUsed != nil {
			used = unixTime(*t.LastUsed)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Name, t.Role, unixTime(t.Created), used)
	}
	tw.Flush()
	return nil
}

// revokeToken revokes the token called name, and says so on stderr.
func revokeToken(ctx context.Context, db *statedb.DB, name string, stderr io.Writer) error {
	if err := db.Update(ctx, func(tx *statedb.Tx) error { return tx.RevokeToken(ctx, name) }); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "lorry-controller-webapp token: revoked %s\n", name)
	return nil
}

func unixTime(t int64) string { return time.Unix(t, 0).UTC().Format("2006-01-02 15:04:05 UTC") }

// checkAuth says at start what the operator should know about tokens:
// that nobody asks for them, or that there is no admin token yet and how
// to make one, and which secret files others can read.
func checkAuth(ctx context.Context, cfg webappconf.Config, db *statedb.DB, log *slog.Logger) error {
	for _, f := range []string{cfg.AdminTokenFile, cfg.Downstream.TokenFile} {
		if f == "" {
			continue
		}
		if w := secretfile.Check(f); w != "" {
			log.Warn("secret file open to others", "warning", w)
		}
	}
	if cfg.InsecureNoAuth {
		log.Warn("--insecure-no-auth: no token is asked for; whoever reaches the WEBAPP may do everything, and get the minions' jobs with their credentials")
		return nil
	}
	var has bool
	err := db.View(ctx, func(tx *statedb.Tx) error {
		var err error
		has, err = tx.HasAdminToken(ctx)
		return err
	})
	if err != nil {
		return err
	}
	if !has {
		where := "--statedb " + shellQuote(cfg.StateDB)
		if cfg.ConfigFile != "" {
			where = "--config " + shellQuote(cfg.ConfigFile)
		}
		log.Warn("no admin token yet: nothing can be changed until one is made; as the WEBAPP's user, run",
			"run", "lorry-controller-webapp token create --role admin --name admin "+where+" >admin.token",
			"then", "chmod 600 admin.token; give its path as admin-token-file, for the timer units")
	}
	return nil
}

// shellQuote quotes s for a shell command line when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
