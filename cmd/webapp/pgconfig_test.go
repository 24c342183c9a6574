package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lorrycontroller.dev/lc/statedb/dbtest"
	"lorrycontroller.dev/lc/webappconf"
)

// pgConfig writes a WEBAPP configuration file in dir, as an operator
// moving to PostgreSQL writes it: statedb names a new database on a
// server that asks for a password, without it, and
// statedb-password-file the file that holds it; then extra.
func pgConfig(t *testing.T, dir, extra string) string {
	t.Helper()
	addr, password := dbtest.PasswordDatabase(t)
	passFile := filepath.Join(dir, "statedb-password")
	if err := os.WriteFile(passFile, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "webapp.conf")
	text := "statedb = " + addr + "\nstatedb-password-file = " + passFile + "\n" + extra
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return conf
}

// configuredStateDB is the statedb of the configuration file conf.
func configuredStateDB(t *testing.T, conf string) string {
	t.Helper()
	cfg, err := webappconf.Parse([]string{"--config", conf}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.StateDB
}

// TestTokenWithConfigOnPostgres makes, lists and revokes tokens in a
// PostgreSQL state database found through the WEBAPP's configuration
// file, the password in its statedb-password-file, as the installed
// WEBAPP finds it; and with --statedb given beside --config, which takes
// the password file from the configuration all the same.
func TestTokenWithConfigOnPostgres(t *testing.T) {
	dir := t.TempDir()
	conf := pgConfig(t, dir, "")
	password, err := os.ReadFile(filepath.Join(dir, "statedb-password"))
	if err != nil {
		t.Fatal(err)
	}
	secret := strings.TrimSpace(string(password))
	check := func(what string, code int, out, errOut string) {
		t.Helper()
		if code != 0 {
			t.Errorf("%s: %d\n%s%s", what, code, out, errOut)
		}
		if strings.Contains(out+errOut, secret) {
			t.Errorf("%s shows the password:\n%s%s", what, out, errOut)
		}
	}
	code, token, errOut := runWebapp(t, "token", "create", "--role", "admin", "--name", "root", "--config", conf)
	check("token create --config", code, token, errOut)
	if !strings.HasPrefix(token, "lct_") {
		t.Errorf("token create printed %q; want a token", token)
	}
	code, out, errOut := runWebapp(t, "token", "list", "--config", conf)
	check("token list --config", code, out, errOut)
	if !strings.Contains(out, "root") {
		t.Errorf("token list:\n%s\nwant root", out)
	}
	code, out, errOut = runWebapp(t, "token", "create", "--role", "minion", "--name", "build-01",
		"--statedb", configuredStateDB(t, conf), "--config", conf)
	check("token create --statedb --config", code, out, errOut)
	code, out, errOut = runWebapp(t, "token", "revoke", "--config", conf, "root")
	check("token revoke --config", code, out, errOut)
	code, out, errOut = runWebapp(t, "token", "list", "--config", conf)
	check("token list --config", code, out, errOut)
	if strings.Contains(out, "root") || !strings.Contains(out, "build-01") {
		t.Errorf("token list after revoking root:\n%s\nwant build-01 alone", out)
	}
}
