package main

import (
	"bytes"
	"io"
	"net/url"
	"strings"
	"testing"

	"lorrycontroller.dev/lc/webappconf"
)

// statedbSecretForms are PostgreSQL addresses holding the password
// pass, with user user, in each form libpq reads: the URI, its scheme in
// any case, with the password in the user part or as a parameter
// (password, sslpassword, in any case, encoded or not), and the keyword
// form.
func statedbSecretForms(user, pass string) []string {
	enc := strings.ReplaceAll(url.QueryEscape(pass), "+", "%20")
	quoted := "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(pass) + "'"
	var forms []string
	for _, scheme := range []string{"postgres://", "postgresql://", "POSTGRES://", "PostgreSQL://"} {
		forms = append(forms,
			scheme+url.UserPassword(user, pass).String()+"@db.example.org/lorry",
			scheme+user+":"+pass+"@db.example.org/lorry",
			scheme+"lc@db.example.org/lorry?sslmode=require&password="+enc,
			scheme+"lc@db.example.org/lorry?sslpassword="+pass+"&sslmode=require",
			scheme+"db.example.org/lorry?SSLPASSWORD="+enc,
			scheme+"db.example.org/lorry?pass%77ord="+enc,
		)
	}
	for _, key := range []string{"password", "sslpassword", "PASSWORD"} {
		forms = append(forms,
			"host=db.example.org dbname=lorry "+key+"="+quoted,
			key+" = "+quoted+" host=db.example.org")
	}
	return forms
}

// TestStateDBSecretsNotOnCommandLine: a PostgreSQL address holding a
// password or another secret, in any form and whatever its characters,
// is refused on the command line of the WEBAPP (and so of its token and
// backup commands, which read --statedb as it does) and of
// migrate-statedb --to, and the refusal does not show it.
func TestStateDBSecretsNotOnCommandLine(t *testing.T) {
	for c := byte(' '); c <= '~'; c++ {
		user, pass := "us"+string(c)+"er", "SEK"+string(c)+"RIT"
		for _, addr := range statedbSecretForms(user, pass) {
			for _, args := range [][]string{{"--statedb", addr}, {"--statedb=" + addr}} {
				_, err := webappconf.Parse(args, io.Discard)
				if err == nil || !strings.Contains(err.Error(), "--statedb-password-file") {
					t.Errorf("%q: err = %v; want a refusal naming --statedb-password-file", args, err)
				} else if strings.Contains(err.Error(), "SEK") || strings.Contains(err.Error(), "RIT") {
					t.Errorf("%q: the refusal shows the password: %v", args, err)
				}
			}
			var out, errOut bytes.Buffer
			code := migrateStatedbMain([]string{"--from", "lorry-controller.db", "--to", addr}, &out, &errOut)
			shown := out.String() + errOut.String()
			if code != 2 || !strings.Contains(shown, "want no password") {
				t.Errorf("migrate-statedb --to %q: exit %d, %q; want 2 and a refusal", addr, code, shown)
			}
			if strings.Contains(shown, "SEK") || strings.Contains(shown, "RIT") {
				t.Errorf("migrate-statedb --to %q shows the password: %s", addr, shown)
			}
		}
	}
	for _, addr := range []string{"postgres://lc@db/lorry", "POSTGRES://lc@db/lorry?sslmode=require", "host=db dbname=lorry user=lc"} {
		if c, err := webappconf.Parse([]string{"--statedb", addr}, io.Discard); err != nil || c.StateDB != addr {
			t.Errorf("--statedb %q without a password: %q, %v; want it taken", addr, c.StateDB, err)
		}
	}
}

// TestMigrateStatedbFromPostgres: --from is a SQLite file; a PostgreSQL
// address there is refused, without showing its password.
func TestMigrateStatedbFromPostgres(t *testing.T) {
	for _, from := range []string{"postgres://lc:SEKRIT@db/lorry", "host=db password=SEKRIT"} {
		var out, errOut bytes.Buffer
		code := migrateStatedbMain([]string{"--from", from, "--to", "postgres://lc@db/lorry"}, &out, &errOut)
		if shown := out.String() + errOut.String(); code != 2 || strings.Contains(shown, "SEKRIT") {
			t.Errorf("migrate-statedb --from %q: exit %d, %q; want 2, the password not shown", from, code, shown)
		}
	}
}
