package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"lorrycontroller.dev/lc/statedb/dbtest"
	"lorrycontroller.dev/lc/wire"
)

// apiClient calls a WEBAPP with a token, or a session cookie.
type apiClient struct {
	t      *testing.T
	url    string
	token  string
	cookie *http.Cookie
}

func (c apiClient) do(method, route string, form url.Values) (int, []byte, *http.Response) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.url+route, strings.NewReader(form.Encode()))
	if err != nil {
		c.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.cookie != nil {
		req.AddCookie(c.cookie)
	}
	// A sign-in answers with its cookie and a redirection, not followed.
	hc := &http.Client{Timeout: waitLimit, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, route, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, route, err)
	}
	return resp.StatusCode, b, resp
}

// must makes a request that must answer 200, and returns the body.
func (c apiClient) must(method, route string, form url.Values) []byte {
	c.t.Helper()
	code, b, _ := c.do(method, route, form)
	if code != http.StatusOK {
		c.t.Fatalf("%s %s = %d %s", method, route, code, b)
	}
	return b
}

// runWebapp runs the WEBAPP's binary with args, and returns its exit code
// and output.
func runWebapp(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := exec.Command(webappBin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if err != nil && cmd.ProcessState == nil {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
}

// movedState is what a WEBAPP answers about the state that moves.
type movedState struct {
	status, lorries string
	jobs            map[int64]string
}

func readMovedState(t *testing.T, c apiClient, ids []int64) movedState {
	t.Helper()
	var st map[string]any
	if err := json.Unmarshal(c.must("GET", "/1.0/status", nil), &st); err != nil {
		t.Fatal(err)
	}
	// The free space of where the database lives is not the state, nor
	// are the WEBAPPs that ran on it.
	delete(st, "disk_free")
	delete(st, "replicas")
	status, _ := json.Marshal(st)
	s := movedState{status: string(status), lorries: string(c.must("GET", "/1.0/lorries", nil)), jobs: map[int64]string{}}
	for _, id := range ids {
		s.jobs[id] = string(c.must("GET", fmt.Sprintf("/1.0/job/%d", id), nil))
	}
	return s
}

// sqliteWebapp is what a WEBAPP on SQLite left: its tokens by role, its
// jobs, a browser's session cookie, and its answers.
type sqliteWebapp struct {
	from   string
	tokens map[string]string
	ids    []int64
	cookie *http.Cookie
	before movedState
}

// runOnSQLite runs a WEBAPP on a SQLite state database in dir, with an
// admin and a minion token, four jobs (the last still running) and a
// signed-in browser, then stops it.
func runOnSQLite(t *testing.T, dir string, args []string) sqliteWebapp {
	t.Helper()
	repo := filepath.Join(dir, "confgit-origin")
	makeRepo(t, repo, map[string]string{
		"lorry-controller.conf": `[{"type": "lorries", "prefix": "mirrors", "globs": ["a.lorry"], "interval": "1h"}]` + "\n",
		"a.lorry":               specs("a", 12),
	})
	from := filepath.Join(dir, "state.db")
	tokens := map[string]string{}
	for _, tc := range [][2]string{{"admin", "alice"}, {"minion", "m"}} {
		code, out, errOut := runWebapp(t, "token", "create", "--role", tc[0], "--name", tc[1], "--statedb", from)
		if code != 0 {
			t.Fatalf("token create: %d %s", code, errOut)
		}
		tokens[tc[0]] = strings.TrimSpace(out)
	}
	d1 := filepath.Join(dir, "w1")
	os.Mkdir(d1, 0o755)
	w1 := startWebapp(t, d1, startOpts{args: append([]string{"--statedb", from, "--confgit-url", repo}, args...)})
	admin := apiClient{t: t, url: w1.url, token: tokens["admin"]}
	minion := apiClient{t: t, url: w1.url, token: tokens["minion"]}
	admin.must("POST", "/1.0/read-configuration", nil)
	var ids []int64
	for i := range 4 {
		req := wire.JobRequest{Minion: "m-1", Host: "h", PID: 100}
		var o wire.Offer
		if err := json.Unmarshal(minion.must("POST", "/1.0/give-me-job", req.Form()), &o); err != nil || o.ID == 0 {
			t.Fatalf("give-me-job: %+v %v", o, err)
		}
		ids = append(ids, o.ID)
		u := wire.Update{JobID: o.ID, Minion: "m-1", PID: 100, Stdout: fmt.Sprintf("fetching %s\n", o.Path)}
		if i < 3 {
			// The last stays running.
			exit := int64(i % 2)
			u.Exit, u.Stderr = &exit, "Receiving objects: 100%\rdone\n"
		}
		minion.must("POST", "/1.0/job-update", u.Form())
	}
	_, _, resp := admin.do("POST", "/1.0/sign-in-html", url.Values{"token": {tokens["admin"]}})
	var cookie *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == "lorry_controller_session" {
			cookie = ck
		}
	}
	if cookie == nil {
		t.Fatal("no session cookie from signing in")
	}
	before := readMovedState(t, admin, ids)
	w1.stop(t)
	return sqliteWebapp{from: from, tokens: tokens, ids: ids, cookie: cookie, before: before}
}

// TestMigrateStatedb runs a WEBAPP on SQLite with jobs, tokens and a
// session, stops it, moves its state database with migrate-statedb into
// PostgreSQL, and starts a WEBAPP there: it answers the status, lorries
// and jobs as the first did, and the moved tokens and session still work.
func TestMigrateStatedb(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--debug-fake-time", "--read-access", "token"}
	sq := runOnSQLite(t, dir, args)
	from, tokens, ids, cookie, before := sq.from, sq.tokens, sq.ids, sq.cookie, sq.before

	to := dbtest.Database(t)
	if !strings.HasPrefix(to, "postgres://") {
		t.Fatalf("the test database is %q; want a postgres:// address", to)
	}
	passFile := filepath.Join(dir, "pgpass")
	if err := os.WriteFile(passFile, []byte("not-needed-here\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	withPassword := strings.Replace(to, "postgres://", "postgres://lc:secret@", 1)
	if code, _, errOut := runWebapp(t, "migrate-statedb", "--from", from, "--to", withPassword); code != 2 || strings.Contains(errOut, "secret") {
		t.Errorf("migrate-statedb with a password in --to: %d %s; want refused with 2, the password not shown", code, errOut)
	}
	code, out, errOut := runWebapp(t, "migrate-statedb", "--from", from, "--to", to, "--statedb-password-file", passFile)
	if code != 0 {
		t.Fatalf("migrate-statedb: %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"lorries: 12 rows copied", "jobs: 4 rows copied", "tokens: 2 rows copied", "web_sessions: 1 rows copied"} {
		if !strings.Contains(out, want) {
			t.Errorf("migrate-statedb printed no %q:\n%s", want, out)
		}
	}
	if !strings.Contains(out, "table") || !strings.Contains(out, "PostgreSQL") {
		t.Errorf("migrate-statedb printed no row counts:\n%s", out)
	}
	if code, _, errOut := runWebapp(t, "migrate-statedb", "--from", from, "--to", to); code != 1 || !strings.Contains(errOut, "has rows") {
		t.Errorf("migrate-statedb into the copy again: %d %s; want refused, the database not empty", code, errOut)
	}

	d2 := filepath.Join(dir, "w2")
	os.Mkdir(d2, 0o755)
	w2 := startWebapp(t, d2, startOpts{args: append([]string{"--statedb", to}, args...)})
	admin := apiClient{t: t, url: w2.url, token: tokens["admin"]}
	minion := apiClient{t: t, url: w2.url, token: tokens["minion"]}
	after := readMovedState(t, admin, ids)
	if after.status != before.status {
		t.Errorf("/1.0/status after the move:\n%s\nwant\n%s", after.status, before.status)
	}
	if after.lorries != before.lorries {
		t.Errorf("/1.0/lorries after the move:\n%s\nwant\n%s", after.lorries, before.lorries)
	}
	for _, id := range ids {
		if after.jobs[id] != before.jobs[id] {
			t.Errorf("/1.0/job/%d after the move:\n%s\nwant\n%s", id, after.jobs[id], before.jobs[id])
		}
	}
	// The moved tokens and session still work, and only they; the next
	// job has the next id.
	exit := int64(0)
	minion.must("POST", "/1.0/job-update", wire.Update{JobID: ids[3], Minion: "m-1", PID: 100, Exit: &exit}.Form())
	var o wire.Offer
	req := wire.JobRequest{Minion: "m-1", Host: "h", PID: 100}
	if err := json.Unmarshal(minion.must("POST", "/1.0/give-me-job", req.Form()), &o); err != nil || o.ID != ids[3]+1 {
		t.Errorf("give-me-job after the move: %+v %v; want job %d", o, err, ids[3]+1)
	}
	admin.must("POST", "/1.0/stop-queue", nil)
	browser := apiClient{t: t, url: w2.url, cookie: cookie}
	browser.must("GET", "/1.0/lorries", nil)
	if code, b, _ := (apiClient{t: t, url: w2.url, token: "lct_unknown"}).do("POST", "/1.0/stop-queue", nil); code != http.StatusUnauthorized {
		t.Errorf("an unknown token after the move: %d %s; want 401", code, b)
	}
}
