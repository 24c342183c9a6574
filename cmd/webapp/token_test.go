package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"lorrycontroller.dev/lc/statedb"
	"lorrycontroller.dev/lc/statedb/dbtest"
)

// TestTokenSubcommand makes, lists and revokes tokens in a state database
// found through the configuration file, and checks that only the hashes
// are kept.
func TestTokenSubcommand(t *testing.T) {
	dir := t.TempDir()
	db := statedbOf(t, dir)
	conf := filepath.Join(dir, "webapp.conf")
	if err := os.WriteFile(conf, []byte("statedb = "+db+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := tokenMain(args, &out, &errOut)
		return code, out.String(), errOut.String()
	}
	// A PostgreSQL database is the server's to make; a SQLite file is the
	// first create's.
	if code, _, stderr := run("list", "--config", conf); !dbtest.Postgres() && (code != 1 || !strings.Contains(stderr, "no such file")) {
		t.Errorf("list before any database: %d %q; want 1, and no database made", code, stderr)
	}
	code, admin, stderr := run("create", "--role", "admin", "--name", "root", "--config", conf)
	if code != 0 || !strings.HasPrefix(admin, "lct_") || strings.Count(admin, "\n") != 1 || len(admin) < 44 {
		t.Fatalf("create: %d %q %q; want the token alone on a line", code, admin, stderr)
	}
	if strings.Contains(stderr, strings.TrimSpace(admin)) {
		t.Errorf("create prints the token on stderr too: %q", stderr)
	}
	if code, minion, _ := run("create", "--statedb", db, "--role", "minion", "--name", "build-01"); code != 0 || minion == admin {
		t.Fatalf("create a minion token: %d %q", code, minion)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		err  string
	}{
		{"taken name", []string{"create", "--role", "admin", "--name", "root", "--statedb", db}, 1, "exists"},
		{"bad role", []string{"create", "--role", "reader", "--name", "x", "--statedb", db}, 1, "want admin or minion"},
		{"no name", []string{"create", "--role", "admin", "--statedb", db}, 2, "Usage:"},
		{"unknown verb", []string{"make", "--statedb", db}, 2, "Usage:"},
		{"revoke unknown", []string{"revoke", "nobody", "--statedb", db}, 1, "no token nobody"},
		{"minion name with a newline", []string{"create", "--role", "minion", "--name", "build\n02", "--statedb", db}, 2, "--name: minion name"},
		{"minion name with a space", []string{"create", "--role", "minion", "--name", "build 02", "--statedb", db}, 2, "--name: minion name"},
	} {
		if code, _, stderr := run(tc.args...); code != tc.code || !strings.Contains(stderr, tc.err) {
			t.Errorf("%s: %d %q; want %d and %q", tc.name, code, stderr, tc.code, tc.err)
		}
	}
	if bytes.Contains(storedBytes(t, db), []byte(strings.TrimSpace(admin))) {
		t.Errorf("the database holds the token itself")
	}
	if code, out, _ := run("list", "--statedb", db); code != 0 || !strings.Contains(out, "build-01  minion") || !strings.Contains(out, "never") ||
		strings.Contains(out, strings.TrimSpace(admin)) {
		t.Errorf("list: %d\n%s", code, out)
	}
	if code, _, _ := run("revoke", "--statedb", db, "build-01"); code != 0 {
		t.Errorf("revoke: %d", code)
	}
	if code, out, _ := run("list", "--statedb", db); code != 0 || strings.Contains(out, "build-01") || !strings.Contains(out, "root") {
		t.Errorf("list after revoke: %d\n%s", code, out)
	}
	d, err := statedb.Open(context.Background(), db, statedb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	err = d.View(context.Background(), func(tx *statedb.Tx) error {
		tok, err := tx.TokenByHash(context.Background(), statedb.HashSecret(strings.TrimSpace(admin)))
		if err == nil && (tok.Name != "root" || tok.Role != statedb.RoleAdmin) {
			t.Errorf("token found as %+v; want root, admin", tok)
		}
		return err
	})
	if err != nil {
		t.Errorf("the printed token is not the stored one: %v", err)
	}
}

// TestCallSendsToken has call send the admin token of the configuration
// file, or of --token-file.
func TestCallSendsToken(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Get("Authorization")
		io.WriteString(w, "{}")
	}))
	defer srv.Close()
	dir := t.TempDir()
	for name, text := range map[string]string{"admin.token": "lct_admin\n", "other.token": "lct_other\n",
		"webapp.conf": "listen = " + strings.TrimPrefix(srv.URL, "http://") + "\nadmin-token-file = " + filepath.Join(dir, "admin.token") + "\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	conf := filepath.Join(dir, "webapp.conf")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--config", conf, "POST", "/1.0/stop-queue"}, "Bearer lct_admin"},
		{[]string{"--config", conf, "--token-file", filepath.Join(dir, "other.token"), "POST", "/1.0/stop-queue"}, "Bearer lct_other"},
		{[]string{"--url", srv.URL, "GET", "/1.0/status"}, ""},
	} {
		got = "unset"
		var out, errOut bytes.Buffer
		if code := callMain(tc.args, &out, &errOut); code != 0 || got != tc.want {
			t.Errorf("call %v: %d %s, Authorization %q; want %q", tc.args, code, errOut.String(), got, tc.want)
		}
	}
}

// storedBytes is what the STATEDB at place keeps of its tokens, as stored:
// a SQLite file's bytes, or the rows of PostgreSQL's tokens table as
// text.
func storedBytes(t *testing.T, place string) []byte {
	t.Helper()
	if !statedb.IsPostgres(place) {
		raw, err := os.ReadFile(place)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, place)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var rows string
	if err := conn.QueryRow(ctx, `SELECT coalesce(string_agg(t::text, E'\n'), '') FROM tokens t`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rows, "root") {
		t.Fatalf("tokens as stored: %q; want the token root among them", rows)
	}
	return []byte(rows)
}

// secretFileModes are modes of a secret file, and whether each is open to
// every user.
var secretFileModes = []struct {
	mode os.FileMode
	open bool
}{{0o600, false}, {0o640, false}, {0o660, false}, {0o644, true}, {0o604, true}, {0o602, true}, {0o601, true}, {0o666, true}}

// TestCallWarnsOfOpenTokenFile has call read its token from --token-file
// and from the configuration's admin-token-file, of every mode: it warns
// when every user may read or write the file, and never prints the token.
func TestCallWarnsOfOpenTokenFile(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "{}") }))
	defer srv.Close()
	for _, m := range secretFileModes {
		dir := t.TempDir()
		token := filepath.Join(dir, "admin.token")
		conf := filepath.Join(dir, "webapp.conf")
		if err := os.WriteFile(conf, []byte("listen = "+strings.TrimPrefix(srv.URL, "http://")+"\nadmin-token-file = "+token+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(token, []byte("lct_callSecretToken\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(token, m.mode); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{
			{"--url", srv.URL, "--token-file", token, "GET", "/1.0/status"},
			{"--config", conf, "GET", "/1.0/status"},
		} {
			var out, errOut bytes.Buffer
			code := callMain(args, &out, &errOut)
			warned := strings.Contains(errOut.String(), fmt.Sprintf("open to every user (mode %03o)", m.mode))
			if code != 0 || warned != m.open {
				t.Errorf("call %v, token file mode %03o: %d, stderr %q; want 0, a warning %v", args, m.mode, code, errOut.String(), m.open)
			}
			if strings.Contains(out.String()+errOut.String(), "lct_callSecretToken") {
				t.Errorf("call %v prints the token: %q %q", args, out.String(), errOut.String())
			}
		}
	}
}

// TestWebappWarnsOfOpenSecretFiles starts the real WEBAPP, at debug level,
// with admin-token-file and downstream-token-file of every mode: it warns
// at start of each that every user may read or write, and logs neither
// secret.
func TestWebappWarnsOfOpenSecretFiles(t *testing.T) {
	for _, m := range secretFileModes {
		t.Run(fmt.Sprintf("%03o", m.mode), func(t *testing.T) {
			dir := t.TempDir()
			files := map[string]string{"admin.token": "lct_adminSecretToken", "gitlab.token": "glpat-downstreamSecret"}
			for name, secret := range files {
				path := filepath.Join(dir, name)
				if err := os.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(path, m.mode); err != nil {
					t.Fatal(err)
				}
			}
			w := startWebapp(t, dir, startOpts{args: []string{"--log-level", "debug",
				"--admin-token-file", filepath.Join(dir, "admin.token"),
				"--downstream-host-type", "gitlab", "--downstream-host", "http://127.0.0.1:9",
				"--downstream-token-file", filepath.Join(dir, "gitlab.token")}})
			get(t, w.url+"/1.0/status")
			w.stop(t)
			log := w.log(t)
			for name, secret := range files {
				warned := strings.Contains(log, filepath.Join(dir, name)+" holds a secret and is open to every user")
				if warned != m.open {
					t.Errorf("%s of mode %03o: warned %v; want %v; log:\n%s", name, m.mode, warned, m.open, log)
				}
				if strings.Contains(log, secret) {
					t.Errorf("the log holds the secret of %s:\n%s", name, log)
				}
			}
		})
	}
}

// TestStartNamesTheAdminTokenCommand starts the real WEBAPP with no admin
// token: its log names the command that makes one, which, run as it is
// written, makes a token that the WEBAPP then takes; started again, the
// WEBAPP says nothing of the kind.
func TestStartNamesTheAdminTokenCommand(t *testing.T) {
	dir := t.TempDir()
	w := startWebapp(t, dir, startOpts{})
	w.stop(t)
	log := w.log(t)
	_, rest, ok := strings.Cut(log, "no admin token yet")
	if !ok {
		t.Fatalf("the log does not say that there is no admin token:\n%s", log)
	}
	_, rest, ok = strings.Cut(rest, " run=")
	if !ok {
		t.Fatalf("the log names no command:\n%s", log)
	}
	line, _, _ := strings.Cut(rest, " then=")
	command, err := strconv.Unquote(line)
	if err != nil {
		t.Fatalf("the command %s: %v", line, err)
	}
	prog, args, ok := strings.Cut(command, " ")
	if prog != "lorry-controller-webapp" || !ok {
		t.Fatalf("the command %q does not run lorry-controller-webapp", command)
	}
	sh := exec.Command("/bin/sh", "-c", `exec "$0" `+args, webappBin)
	sh.Dir = dir
	if out, err := sh.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", command, err, out)
	}
	token, err := os.ReadFile(filepath.Join(dir, "admin.token"))
	if err != nil || !bytes.HasPrefix(token, []byte("lct_")) {
		t.Fatalf("%s wrote %q, %v; want a token", command, token, err)
	}
	if err := os.Remove(filepath.Join(dir, "addr")); err != nil {
		t.Fatal(err)
	}
	w = startWebapp(t, dir, startOpts{})
	req, _ := http.NewRequest("POST", w.url+"/1.0/stop-queue", nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("stop-queue with the token made: %d; want 200", resp.StatusCode)
	}
	w.stop(t)
	if log := w.log(t); strings.Contains(log, "no admin token yet") {
		t.Errorf("with an admin token, the WEBAPP still says there is none:\n%s", log)
	}
}
