package yarns

import (
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver

	"lorrycontroller.dev/lc/gittest"
	"lorrycontroller.dev/lc/statedb"
	"lorrycontroller.dev/lc/statedb/dbtest"
)

// The replicas scenario: how long the minions work, when one WEBAPP is
// killed and when another's database connections are ended.
const (
	replicasRun       = 18 * time.Second
	replicasKill      = 6 * time.Second
	replicasTerminate = 10 * time.Second
	replicasLease     = 3 * time.Second
	replicasHostLimit = 5
	replicasNarrow    = 2
)

// TestReplicas runs WEBAPPs on one STATEDB with eight real minions spread
// over them, each minion told every WEBAPP's address, and 200 lorries in
// two queues, one of two threads, on a host of max_jobs 5. On PostgreSQL
// there are three WEBAPPs: one is killed with SIGKILL mid-run, and then the
// server ends every connection of another (pg_terminate_backend). On
// SQLite the same checks hold of one WEBAPP. In the end no lorry had two
// live jobs at once, no limit was exceeded, every job ended and none as
// lost or orphaned, the killed WEBAPP's leases moved to the others within
// their term, and its minions went on through the others.
func TestReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for half a minute on each backend")
	}
	t.Run("sqlite", func(t *testing.T) { runReplicas(t, filepath.Join(t.TempDir(), "state.db"), 1) })
	t.Run("postgres", func(t *testing.T) { runReplicas(t, dbtest.Database(t), 3) })
}

// replica is a WEBAPP process of the scenario.
type replica struct {
	name, url, log string
	cmd            *exec.Cmd
}

func runReplicas(t *testing.T, place string, n int) {
	for _, bin := range []string{webappBin, minionBin} {
		if err := buildErrs[bin]; err != nil {
			t.Fatal(err)
		}
	}
	work := t.TempDir()
	conf := replicasConfgit(t, work)
	reps := make([]*replica, n)
	for i := range reps {
		reps[i] = startReplica(t, work, place, conf, fmt.Sprintf("r%d", i+1), "--insecure-no-auth", "--periodic-work")
	}
	host, _ := os.Hostname()
	replicasPost(t, reps[0].url, "read-configuration", nil)
	replicasPost(t, reps[n-1].url, "set-host-max-jobs", url.Values{"host": {host}, "max_jobs": {strconv.Itoa(replicasHostLimit)}})

	lorry := filepath.Join(work, "lorry")
	if err := os.WriteFile(lorry, []byte("#!/bin/sh\nsleep 0.$(( $$ % 5 + 1 ))\necho mirrored\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	minions := make([]*exec.Cmd, 8)
	for i := range minions {
		// Each minion asks its own WEBAPP first, and the others after it.
		var urls []string
		for k := range n {
			urls = append(urls, reps[(i+k)%n].url)
		}
		name := fmt.Sprintf("m%d", i)
		minions[i] = startProc(t, filepath.Join(work, "minion-"+name+".log"), minionBin,
			"--webapp-url", strings.Join(urls, ","), "--name", name, "--sleep", "100ms", "--update-interval", "300ms",
			"--lorry-cmd", lorry, "--working-area", filepath.Join(work, "minion-"+name))
	}

	var killedAt time.Time
	if n >= 2 {
		time.Sleep(time.Until(start.Add(replicasKill)))
		killedAt = time.Now()
		reps[1].cmd.Process.Signal(syscall.SIGKILL)
		reps[1].cmd.Wait()
		t.Logf("%s killed", reps[1].name)
	}
	if n >= 3 {
		time.Sleep(time.Until(start.Add(replicasTerminate)))
		ended := terminateBackends(t, place, "lorry-controller-webapp "+reps[2].name)
		t.Logf("%d connections of %s ended by the server", ended, reps[2].name)
	}
	time.Sleep(time.Until(start.Add(replicasRun)))

	// The queue stops; the jobs running end; then everything stops.
	replicasPost(t, reps[0].url, "stop-queue", nil)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		body := replicasGet(t, reps[0].url+"/1.0/list-running-jobs")
		if strings.Contains(body, `"running_jobs":[]`) || strings.Contains(body, `"running_jobs": []`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("jobs still running a minute after the queue stopped: %s", body)
		}
	}
	for _, m := range minions {
		stopProc(m)
	}
	for _, r := range reps {
		stopProc(r.cmd)
	}
	checkReplicaJobs(t, place, minionsOf(n), killedAt)
	if n >= 2 {
		checkLeasesMoved(t, reps, killedAt)
	}
}

// minionsOf names the minions that asked the killed WEBAPP (the second)
// first.
func minionsOf(n int) map[string]bool {
	first := map[string]bool{}
	if n < 2 {
		return first
	}
	for i := range 8 {
		if i%n == 1 {
			first[fmt.Sprintf("m%d", i)] = true
		}
	}
	return first
}

// replicasConfgit makes the scenario's CONFGIT: 40 lorries in queue
// narrow, of two threads, and 160 in queue wide, each due every second.
func replicasConfgit(t *testing.T, work string) string {
	conf := filepath.Join(work, "confgit")
	gittest.Git(t, "", nil, "init", "-q", "-b", "master", conf)
	files := map[string]string{
		"lorry-controller.conf": fmt.Sprintf(`[
  {"type": "queue", "name": "narrow", "threads": %d},
  {"type": "queue", "name": "wide"},
  {"type": "lorries", "prefix": "narrow", "globs": ["narrow.lorry"], "queue": "narrow", "interval": "1s"},
  {"type": "lorries", "prefix": "wide", "globs": ["wide.lorry"], "queue": "wide", "interval": "1s"}
]
`, replicasNarrow),
		"narrow.lorry": lorrySpecs("narrow", 40),
		"wide.lorry":   lorrySpecs("wide", 160),
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(conf, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gittest.Git(t, conf, nil, "add", "-A")
	gittest.Git(t, conf, nil, "commit", "-q", "-m", "lorries")
	return conf
}

// lorrySpecs is a .lorry file of n lorries.
func lorrySpecs(prefix string, n int) string {
	var b strings.Builder
	b.WriteString("{\n")
	for i := range n {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, "  \"r%d\": {\"type\": \"git\", \"url\": \"https://example.invalid/%s/%d.git\"}", i, prefix, i)
	}
	b.WriteString("\n}\n")
	return b.String()
}

func startReplica(t *testing.T, work, place, conf, name string, extra ...string) *replica {
	dir := filepath.Join(work, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	addrFile := filepath.Join(dir, "addr")
	r := &replica{name: name, log: filepath.Join(dir, "webapp.log")}
	r.cmd = startProc(t, r.log, webappBin, append([]string{"--statedb", place, "--confgit-url", conf,
		"--configuration-directory", filepath.Join(dir, "confgit-clone"), "--listen", "127.0.0.1:0",
		"--addr-file", addrFile, "--log-level", "debug",
		"--ghost-timeout", "20s", "--lease", "5s", "--kill-grace", "1s", "--claim-timeout", "10s",
		"--replica-name", name, "--replica-lease", replicasLease.String()}, extra...)...)
	for deadline := time.Now().Add(waitLimit); r.url == ""; time.Sleep(10 * time.Millisecond) {
		if a, err := os.ReadFile(addrFile); err == nil && strings.HasSuffix(string(a), "\n") {
			r.url = "http://" + strings.TrimSpace(string(a))
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(r.log)
			t.Fatalf("%s wrote no address:\n%s", name, log)
		}
	}
	return r
}

// startProc runs a binary until it is stopped or the test ends.
func startProc(t *testing.T, logFile, bin string, args ...string) *exec.Cmd {
	log, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(binDir, bin), args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopProc(cmd); log.Close() })
	return cmd
}

// stopProc stops cmd with SIGTERM, or SIGKILL if it takes too long; a
// process already stopped is left alone.
func stopProc(cmd *exec.Cmd) {
	if cmd.ProcessState != nil {
		return
	}
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(waitLimit):
		cmd.Process.Kill()
		<-done
	}
}

func replicasPost(t *testing.T, base, route string, form url.Values) {
	t.Helper()
	resp, err := http.PostForm(base+"/1.0/"+route, form)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d %s", route, resp.StatusCode, body)
	}
}

func replicasGet(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

// terminateBackends has the PostgreSQL server end every connection of
// the application named app, but its own, and says how many it ended.
// Behind a pooler its own may be one that last served app.
func terminateBackends(t *testing.T, place, app string) int {
	t.Helper()
	db, err := sql.Open("pgx", place)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	err = db.QueryRow(`SELECT COUNT(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = $1 AND pid <> pg_backend_pid()`, app).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// replicaJob is a job as the jobs table has it.
type replicaJob struct {
	id                int64
	path, queue, host string
	minion, status    string
	started           int64
	ended             sql.NullInt64
}

// checkReplicaJobs checks the jobs of the scenario from the database:
// each ended, none lost or orphaned, no lorry had two at once, no limit
// was exceeded, and the minions of the WEBAPP killed at killedAt ran jobs
// after it.
func checkReplicaJobs(t *testing.T, place string, ofKilled map[string]bool, killedAt time.Time) {
	t.Helper()
	driver, dsn := "sqlite", "file:"+place+"?mode=ro"
	if statedb.IsPostgres(place) {
		driver, dsn = "pgx", place
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT id, path, queue, host, minion, status, started, ended FROM jobs ORDER BY path, id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var jobs []replicaJob
	statuses := map[string]int{}
	after := 0
	for rows.Next() {
		var j replicaJob
		if err := rows.Scan(&j.id, &j.path, &j.queue, &j.host, &j.minion, &j.status, &j.started, &j.ended); err != nil {
			t.Fatal(err)
		}
		statuses[j.status]++
		if !j.ended.Valid {
			t.Errorf("job %d of %s never ended (%s)", j.id, j.path, j.status)
		}
		if j.status == "lost" || j.status == "orphaned" {
			t.Errorf("job %d of %s ended %s", j.id, j.path, j.status)
		}
		if n := len(jobs); n > 0 && jobs[n-1].path == j.path && jobs[n-1].ended.Valid && j.started < jobs[n-1].ended.Int64 {
			t.Errorf("job %d of %s handed out at %d, before job %d ended at %d", j.id, j.path, j.started, jobs[n-1].id, jobs[n-1].ended.Int64)
		}
		if ofKilled[j.minion] && j.started > killedAt.Unix() {
			after++
		}
		jobs = append(jobs, j)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d jobs: %v", len(jobs), statuses)
	if len(jobs) < 50 {
		t.Errorf("only %d jobs ran", len(jobs))
	}
	if len(ofKilled) > 0 && after == 0 {
		t.Errorf("the minions of the killed WEBAPP (%v) ran no job after it died", ofKilled)
	}
	if most := mostAtOnce(jobs, func(j replicaJob) bool { return j.queue == "narrow" }); most > replicasNarrow {
		t.Errorf("%d jobs of queue narrow at once, of %d threads", most, replicasNarrow)
	}
	if most := mostAtOnce(jobs, func(replicaJob) bool { return true }); most > replicasHostLimit {
		t.Errorf("%d jobs on the host at once, of max_jobs %d", most, replicasHostLimit)
	}
}

// mostAtOnce is the most jobs that keep ran at once, by their times in
// the database: the writes of all WEBAPPs happen one at a time, each at
// the time it reads once it holds the database, so a job started in the
// second another ended started after it ended.
func mostAtOnce(jobs []replicaJob, keep func(replicaJob) bool) int {
	most := 0
	for _, a := range jobs {
		if !keep(a) {
			continue
		}
		n := 0
		for _, b := range jobs {
			if keep(b) && b.started <= a.started && (!b.ended.Valid || b.ended.Int64 > a.started) {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}

var leaseTaken = regexp.MustCompile(`msg="lease taken" kind=(\S+) owner=\S+ at_ns=(\d+)`)

// checkLeasesMoved checks, from the logs of the WEBAPPs left, that the
// periodic work went on after the second was killed: each kind's lease
// was taken by another within the lease's term, and a little for the
// work's own period.
func checkLeasesMoved(t *testing.T, reps []*replica, killedAt time.Time) {
	t.Helper()
	first := map[string]time.Time{}
	for i, r := range reps {
		if i == 1 {
			continue
		}
		b, err := os.ReadFile(r.log)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range leaseTaken.FindAllStringSubmatch(string(b), -1) {
			ns, _ := strconv.ParseInt(m[2], 10, 64)
			at := time.Unix(0, ns)
			if at.After(killedAt) && (first[m[1]].IsZero() || at.Before(first[m[1]])) {
				first[m[1]] = at
			}
		}
	}
	for _, kind := range []string{"tick"} {
		at, ok := first[kind]
		if !ok {
			t.Errorf("no WEBAPP took the lease of %s after the second was killed", kind)
			continue
		}
		if wait := at.Sub(killedAt); wait > replicasLease+5*time.Second {
			t.Errorf("the lease of %s moved %v after the kill; want within its term %v and the work's period", kind, wait, replicasLease)
		} else {
			t.Logf("the lease of %s was taken %v after the kill", kind, wait.Round(time.Millisecond))
		}
	}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// TestReplicaSessions signs a browser in on one WEBAPP and uses its
// session, and the session's CSRF token, on another sharing the
// PostgreSQL STATEDB; the status of either shows both replicas.
func TestReplicaSessions(t *testing.T) {
	place := dbtest.Database(t)
	work := t.TempDir()
	conf := replicasConfgit(t, work)
	out, err := exec.Command(filepath.Join(binDir, webappBin), "token", "create", "--role", "admin", "--name", "root",
		"--statedb", place).Output()
	if err != nil {
		t.Fatalf("token create: %v", err)
	}
	token := strings.TrimSpace(string(out))
	r1 := startReplica(t, work, place, conf, "r1")
	r2 := startReplica(t, work, place, conf, "r2")

	// A commit is applied once: read again on either WEBAPP, nothing
	// changes.
	for i, r := range []*replica{r1, r2, r1, r2} {
		req, _ := http.NewRequest("POST", r.url+"/1.0/read-configuration", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := `"added":0,"changed":0,"removed":0`
		if i == 0 {
			want = `"added":200,"changed":0,"removed":0`
		}
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("read-configuration %d on %s: %d %s; want %s", i+1, r.name, resp.StatusCode, body, want)
		}
	}

	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.PostForm(r1.url+"/1.0/sign-in-html", url.Values{"token": {token}, "back": {"/1.0/status-html"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) == 0 {
		t.Fatalf("sign in on r1: %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
	cookie := resp.Cookies()[0]
	req, _ := http.NewRequest("GET", r2.url+"/1.0/status-html", nil)
	req.AddCookie(cookie)
	resp, err = noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := csrfField.FindSubmatch(page)
	if m == nil || !strings.Contains(string(page), "root (admin)") {
		t.Fatalf("r2's status page for r1's session: no buttons or no one signed in:\n%.2000s", page)
	}
	req, _ = http.NewRequest("POST", r2.url+"/1.0/stop-queue-html",
		strings.NewReader(url.Values{"csrf": {string(m[1])}, "back": {"/1.0/status-html"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(cookie)
	resp, err = noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("stop-queue-html on r2 with r1's session: %d; want 303", resp.StatusCode)
	}
	status := replicasGet(t, r1.url+"/1.0/status?run_queue=false")
	if !strings.Contains(status, `"running_queue":false`) {
		t.Errorf("r1 does not see the queue stopped through r2: %.300s", status)
	}
	for _, name := range []string{`"name":"r1"`, `"name":"r2"`} {
		if !strings.Contains(status, name) {
			t.Errorf("status lists no replica %s: %.2000s", name, status)
		}
	}
}
