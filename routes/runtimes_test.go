package routes

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"lorrycontroller.dev/lc/clock"
	"lorrycontroller.dev/lc/confgit"
	"lorrycontroller.dev/lc/control"
	"lorrycontroller.dev/lc/gittest"
	"lorrycontroller.dev/lc/statedb"
	"lorrycontroller.dev/lc/statedb/dbtest"
	"lorrycontroller.dev/lc/wire"
)

// confRepo is a CONFGIT repository made with the git command line.
type confRepo struct {
	t   *testing.T
	dir string
}

func newConfRepo(t *testing.T) *confRepo {
	t.Helper()
	dir := t.TempDir()
	gittest.Git(t, dir, nil, "init", "-q", "--initial-branch=master")
	return &confRepo{t: t, dir: dir}
}

func (r *confRepo) commit(files map[string]string) string {
	r.t.Helper()
	for name, content := range files {
		p := filepath.Join(r.dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
	gittest.Git(r.t, r.dir, nil, "add", "-A")
	gittest.Git(r.t, r.dir, nil, "commit", "-q", "-m", "change")
	return gittest.Git(r.t, r.dir, nil, "rev-parse", "HEAD")
}

func (r *confRepo) git(args ...string) string {
	r.t.Helper()
	return gittest.Git(r.t, r.dir, nil, args...)
}

var scraperRepoFiles = map[string]string{
	confgit.ConfFile: `[
  {"type": "runtime", "name": "fn", "path": "runtimes/fn", "version": "2.3"},
  {"type": "scrapers", "prefix": "scrape", "globs": ["*.scraper"], "interval": "1d", "lorry-timeout": "12h"},
  {"type": "lorries", "prefix": "mirror", "globs": ["*.lorry"]}
]`,
	"runtimes/fn/requirements.txt": "requests\n",
	"runtimes/fn/fn/__init__.py":   "",
	"conf/settings.yaml":           "depth: 3\n",
	"a.scraper": `{"bills": {"runtime": "fn", "module": "fn.bills", "args": ["--all"],
  "config": ["conf/settings.yaml"], "env": {"TOKEN": "s3cret", "LANG": "C"}, "fd-args": true}}`,
	"m.lorry": `{"m": {"type": "git", "url": "https://example.com/m.git"}}`,
}

// newScraperServer serves a real CONFGIT clone, read from repo.
func newScraperServer(t *testing.T, repo *confRepo) *testServer {
	t.Helper()
	dir := t.TempDir()
	fake := &clock.Fake{}
	fake.Set(1000)
	db, err := statedb.Open(context.Background(), dbtest.Place(t), statedb.Options{Clock: fake, Notify: everyEvent()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s := &Server{
		App: &control.App{DB: db, Config: &confgit.Source{Dir: filepath.Join(dir, "confgit"), URL: repo.dir},
			Log: slog.New(slog.NewTextHandler(io.Discard, nil)), GhostTimeout: time.Minute, JobMaxAge: time.Hour,
			FakeClock: fake},
		StatusHTML: filepath.Join(dir, "status.html"), InsecureNoAuth: true,
	}
	hs := httptest.NewServer(checkAnswers(t, s.Handler()))
	t.Cleanup(hs.Close)
	return &testServer{Server: s, url: hs.URL}
}

func (ts *testServer) readConfig(t *testing.T) map[string]any {
	t.Helper()
	code, m := ts.call(t, "POST", "/1.0/read-configuration", url.Values{})
	if code != 200 {
		t.Fatalf("read-configuration = %d %v", code, m)
	}
	return m
}

var minionForm = url.Values{"host": {"h"}, "pid": {"1"}, "minion": {"m1"}}

func (ts *testServer) giveJob(t *testing.T, form url.Values) map[string]any {
	t.Helper()
	code, m := ts.call(t, "POST", "/1.0/give-me-job", form)
	if code != 200 {
		t.Fatalf("give-me-job = %d %v; want a job", code, m)
	}
	return m
}

// scraperOf decodes the scraper object of a give-me-job answer.
func scraperOf(t *testing.T, offer map[string]any) (rt map[string]any, config map[string]string) {
	t.Helper()
	sc, ok := offer["scraper"].(map[string]any)
	if !ok {
		t.Fatalf("answer %v has no scraper object", offer)
	}
	config = map[string]string{}
	for _, c := range sc["config"].([]any) {
		cm := c.(map[string]any)
		b, err := base64.StdEncoding.DecodeString(cm["content"].(string))
		if err != nil {
			t.Fatal(err)
		}
		config[cm["name"].(string)+" "+cm["path"].(string)] = string(b)
	}
	return sc["runtime"].(map[string]any), config
}

func TestGiveMeJobScraper(t *testing.T) {
	repo := newConfRepo(t)
	commit := repo.commit(scraperRepoFiles)
	ts := newScraperServer(t, repo)
	ts.readConfig(t)
	ts.call(t, "POST", "/1.0/move-to-top", url.Values{"path": {"scrape/bills"}})

	offer := ts.giveJob(t, minionForm)
	if offer["kind"] != "scraper" || offer["path"] != "scrape/bills" || offer["push_url"] != "" {
		t.Errorf("got %v, want scrape/bills of kind scraper with no push_url", offer)
	}
	sc := offer["scraper"].(map[string]any)
	rt, config := scraperOf(t, offer)
	wantRT := map[string]any{"name": "fn", "version": "2.3", "id": repo.git("rev-parse", commit+":runtimes/fn"), "python": "python3"}
	if !reflect.DeepEqual(rt, wantRT) {
		t.Errorf("runtime: got %v, want %v", rt, wantRT)
	}
	if got, want := sc["argv"], []any{"python", "-m", "fn.bills", "--all"}; !reflect.DeepEqual(got, want) {
		t.Errorf("argv: got %v, want %v", got, want)
	}
	// The minion alone is given the secrets.
	if got, want := sc["env"], map[string]any{"TOKEN": "s3cret", "LANG": "C"}; !reflect.DeepEqual(got, want) {
		t.Errorf("env: got %v, want %v", got, want)
	}
	if want := map[string]string{"settings.yaml conf/settings.yaml": "depth: 3\n"}; !reflect.DeepEqual(config, want) {
		t.Errorf("config: got %v, want %v", config, want)
	}
	if sc["fd_args"] != true {
		t.Errorf("fd_args: got %v, want true", sc["fd_args"])
	}

	// A lorry is still handed out as before, without a scraper object.
	lorry := ts.giveJob(t, url.Values{"host": {"h"}, "pid": {"2"}, "minion": {"m2"}})
	if lorry["kind"] != "lorry" || lorry["scraper"] != nil {
		t.Errorf("got %v, want the lorry without a scraper object", lorry)
	}
}

// TestScraperJobKeepsItsCommit checks that a claimed job's runtime id and
// files come from one commit, the one read when it was claimed, however
// CONFGIT moves on and is read again while it runs.
func TestScraperJobKeepsItsCommit(t *testing.T) {
	repo := newConfRepo(t)
	first := repo.commit(scraperRepoFiles)
	ts := newScraperServer(t, repo)
	ts.readConfig(t)
	ts.call(t, "POST", "/1.0/move-to-top", url.Values{"path": {"scrape/bills"}})
	offer := ts.giveJob(t, minionForm)
	jobID := offer["job_id"]

	second := repo.commit(map[string]string{"conf/settings.yaml": "depth: 4\n", "runtimes/fn/requirements.txt": "requests\nlxml\n"})
	ts.readConfig(t)
	if _, l := ts.call(t, "GET", "/1.0/lorry/scrape/bills", nil); l["commit"] != second {
		t.Fatalf("after reading again: lorry at commit %v, want %s", l["commit"], second)
	}

	// The minion never saw the answer and asks again: it gets the job as
	// it was claimed, at the first commit.
	again := ts.giveJob(t, minionForm)
	if again["job_id"] != jobID {
		t.Fatalf("asked again: got job %v, want %v", again["job_id"], jobID)
	}
	rt, config := scraperOf(t, again)
	if rt["id"] != repo.git("rev-parse", first+":runtimes/fn") {
		t.Errorf("asked again: runtime id %v, want the one of %s", rt["id"], first)
	}
	if got := config["settings.yaml conf/settings.yaml"]; got != repo.git("show", first+":conf/settings.yaml")+"\n" {
		t.Errorf("asked again: settings %q, want those of %s", got, first)
	}

	// The next job is handed the new commit, all of it.
	id := strconv.FormatFloat(jobID.(float64), 'f', -1, 64)
	if code, m := ts.call(t, "POST", "/1.0/job-update", url.Values{"job_id": {id}, "exit": {"0"}, "minion": {"m1"}}); code != 200 {
		t.Fatalf("job-update = %d %v", code, m)
	}
	ts.call(t, "POST", "/1.0/pretend-time", url.Values{"now": {strconv.Itoa(1000 + 86400)}})
	ts.call(t, "POST", "/1.0/move-to-top", url.Values{"path": {"scrape/bills"}})
	next := ts.giveJob(t, minionForm)
	rt, config = scraperOf(t, next)
	if rt["id"] != repo.git("rev-parse", second+":runtimes/fn") || config["settings.yaml conf/settings.yaml"] != "depth: 4\n" {
		t.Errorf("next job: got runtime %v and settings %q, want those of %s", rt["id"], config["settings.yaml conf/settings.yaml"], second)
	}
}

func getTar(t *testing.T, ts *testServer, path string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(ts.url + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func TestRuntimeArchiveAndList(t *testing.T) {
	repo := newConfRepo(t)
	first := repo.commit(scraperRepoFiles)
	ts := newScraperServer(t, repo)
	ts.readConfig(t)
	// A minion is handed the first runtime, and fetches it after CONFGIT
	// moved on.
	ts.call(t, "POST", "/1.0/move-to-top", url.Values{"path": {"scrape/bills"}})
	ts.giveJob(t, minionForm)
	second := repo.commit(map[string]string{"runtimes/fn/requirements.txt": "requests==2.32.0\n"})
	ts.readConfig(t)
	oldID, curID := repo.git("rev-parse", first+":runtimes/fn"), repo.git("rev-parse", second+":runtimes/fn")

	code, m := ts.call(t, "GET", "/1.0/runtimes", nil)
	want := []any{map[string]any{"name": "fn", "version": "2.3", "id": curID, "python": "python3",
		"path": "runtimes/fn", "commit": second}}
	if code != 200 || !reflect.DeepEqual(m["runtimes"], want) {
		t.Errorf("runtimes = %d %v; want %v", code, m, want)
	}

	for _, tc := range []struct {
		id, requirements string
	}{{curID, "requests==2.32.0\n"}, {oldID, "requests\n"}} {
		code, body := getTar(t, ts, "/1.0/runtime/fn/"+tc.id+".tar")
		if code != 200 {
			t.Fatalf("runtime %s = %d %s", tc.id, code, body)
		}
		got := map[string]string{}
		tr := tar.NewReader(bytes.NewReader(body))
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(tr)
			got[h.Name] = string(b)
		}
		wantFiles := map[string]string{"fn/": "", "fn/__init__.py": "", "requirements.txt": tc.requirements}
		if !reflect.DeepEqual(got, wantFiles) {
			t.Errorf("runtime %s: got %v, want %v", tc.id, got, wantFiles)
		}
	}

	for name, path := range map[string]string{
		"unknown id":           "/1.0/runtime/fn/" + strings.Repeat("0", 40) + ".tar",
		"not hex":              "/1.0/runtime/fn/nothex.tar",
		"a blob":               "/1.0/runtime/fn/" + repo.git("rev-parse", second+":conf/settings.yaml") + ".tar",
		"another tree":         "/1.0/runtime/fn/" + repo.git("rev-parse", second+":conf") + ".tar",
		"the root tree":        "/1.0/runtime/fn/" + repo.git("rev-parse", second+"^{tree}") + ".tar",
		"bad name":             "/1.0/runtime/..%2Fx/" + curID + ".tar",
		"another name":         "/1.0/runtime/gn/" + curID + ".tar",
		"old id, another name": "/1.0/runtime/gn/" + oldID + ".tar",
	} {
		if code, body := getTar(t, ts, path); code != 404 {
			t.Errorf("%s: got %d %.80q, want 404", name, code, body)
		}
	}
}

func TestScraperSecretsHidden(t *testing.T) {
	repo := newConfRepo(t)
	repo.commit(scraperRepoFiles)
	ts := newScraperServer(t, repo)
	ts.readConfig(t)

	_, l := ts.call(t, "GET", "/1.0/lorry/scrape/bills", nil)
	text, _ := l["text"].(string)
	if l["kind"] != "scraper" || strings.Contains(text, "s3cret") || !strings.Contains(text, `"TOKEN":"***"`) {
		t.Errorf("lorry: got kind %v and text %s, want a scraper whose env shows TOKEN but not its value", l["kind"], text)
	}
	if rt, _ := l["runtime"].(map[string]any); rt["name"] != "fn" || rt["version"] != "2.3" {
		t.Errorf("lorry: got runtime %v, want fn 2.3", l["runtime"])
	}
	for _, path := range []string{"/1.0/status", "/1.0/status-html", "/1.0/lorry-html/scrape/bills"} {
		_, body := getTar(t, ts, path)
		if bytes.Contains(body, []byte("s3cret")) {
			t.Errorf("%s shows the secret", path)
		}
	}
}

func TestJobRuntimeReport(t *testing.T) {
	repo := newConfRepo(t)
	repo.commit(scraperRepoFiles)
	ts := newScraperServer(t, repo)
	ts.readConfig(t)
	ts.call(t, "POST", "/1.0/move-to-top", url.Values{"path": {"scrape/bills"}})
	id := strconv.FormatFloat(ts.giveJob(t, minionForm)["job_id"].(float64), 'f', -1, 64)
	lorryID := strconv.FormatFloat(ts.giveJob(t, url.Values{"host": {"h"}, "pid": {"2"}, "minion": {"m2"}})["job_id"].(float64), 'f', -1, 64)

	_, j := ts.call(t, "GET", "/1.0/job/"+id, nil)
	rt, _ := j["runtime"].(map[string]any)
	if rt["name"] != "fn" || rt["built"] != nil || rt["build_seconds"] != nil {
		t.Errorf("before the report: got runtime %v, want fn with built and build_seconds null", j["runtime"])
	}
	for _, bad := range []url.Values{{"runtime_built": {"maybe"}}, {"runtime_build_seconds": {"-1"}}, {"runtime_build_seconds": {"soon"}}} {
		bad.Set("job_id", id)
		bad.Set("exit", "no")
		if code, m := ts.call(t, "POST", "/1.0/job-update", bad); code != 400 {
			t.Errorf("job-update %v = %d %v; want 400", bad, code, m)
		}
	}
	form := url.Values{"job_id": {id}, "exit": {"no"}, "runtime_built": {"true"}, "runtime_build_seconds": {"95.5"}}
	if code, m := ts.call(t, "POST", "/1.0/job-update", form); code != 200 {
		t.Fatalf("job-update = %d %v", code, m)
	}
	_, j = ts.call(t, "GET", "/1.0/job/"+id, nil)
	want := map[string]any{"name": "fn", "version": "2.3", "id": rt["id"], "built": true, "build_seconds": 95.5}
	if !reflect.DeepEqual(j["runtime"], want) {
		t.Errorf("after the report: got runtime %v, want %v", j["runtime"], want)
	}
	_, page := getTar(t, ts, "/1.0/job-html/"+id)
	if !bytes.Contains(page, []byte("built for this job in")) {
		t.Errorf("the job page does not say the runtime was built for it")
	}
	if _, lj := ts.call(t, "GET", "/1.0/job/"+lorryID, nil); lj["runtime"] != nil {
		t.Errorf("a lorry's job: got runtime %v, want null", lj["runtime"])
	}
}

func TestStatusPageKindFilter(t *testing.T) {
	repo := newConfRepo(t)
	repo.commit(scraperRepoFiles)
	ts := newScraperServer(t, repo)
	ts.readConfig(t)
	for _, tc := range []struct {
		kind           string
		want, unwanted string
	}{{"scraper", "scrape/bills", "mirror/m"}, {"lorry", "mirror/m", "scrape/bills"}} {
		code, body := getTar(t, ts, "/1.0/status-html?kind="+tc.kind)
		if code != 200 || !bytes.Contains(body, []byte(">"+tc.want+"<")) || bytes.Contains(body, []byte(">"+tc.unwanted+"<")) {
			t.Errorf("kind %s: got %d, want a page listing %s and not %s", tc.kind, code, tc.want, tc.unwanted)
		}
	}
	if code, _ := getTar(t, ts, "/1.0/status-html?kind=tarball"); code != 400 {
		t.Errorf("unknown kind: got %d, want 400", code)
	}
}

// TestScraperWithoutHistory checks that a scraper that cannot be handed
// out whole fails at once rather than reaching a minion without its files.
func TestScraperWithoutHistory(t *testing.T) {
	ts := newTestServer(t)
	ts.conf.cfg = &confgit.Config{Commit: strings.Repeat("a", 40), Lorries: []confgit.Lorry{{
		Path: "scrape/x", Text: `{"scrape/x":{"runtime":"fn","module":"m"}}`, Kind: wire.KindScraper,
		Interval: time.Hour, Timeout: time.Minute, Runtime: confgit.Runtime{Name: "fn", ID: strings.Repeat("b", 40)}}}}
	ts.readConfig(t)
	if code, m := ts.call(t, "POST", "/1.0/give-me-job", minionForm); code != 204 {
		t.Errorf("give-me-job = %d %v; want 204", code, m)
	}
	_, l := ts.call(t, "GET", "/1.0/lorry/scrape/x", nil)
	if msg, _ := l["last_run_error"].(string); !strings.Contains(msg, "history of CONFGIT") {
		t.Errorf("got last_run_error %q, want the reason", msg)
	}
}

// TestScraperEnvHiddenInOutput runs a scraper that prints the values of
// its env, which a CONFGIT pusher gave as secrets, in the forms a program
// may print them, and fails: no answer or page that shows the job's
// output, its lorry's last_run_error or the notifications shows any, nor
// does the WEBAPP's log.
func TestScraperEnvHiddenInOutput(t *testing.T) {
	var printable strings.Builder
	for c := byte(' '); c <= '~'; c++ {
		printable.WriteByte(c)
	}
	secrets := map[string]string{
		"TOKEN": "glpat-S3cret-token",
		"PASS":  "S3cret " + printable.String() + " é",
	}
	env, err := json.Marshal(secrets)
	if err != nil {
		t.Fatal(err)
	}
	files := maps.Clone(scraperRepoFiles)
	files["a.scraper"] = `{"bills": {"runtime": "fn", "module": "fn.bills", "env": ` + string(env) + `}}`
	repo := newConfRepo(t)
	repo.commit(files)
	ts := newScraperServer(t, repo)
	logs := &lockedWriter{}
	ts.Log = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ts.readConfig(t)

	// What the scraper prints: each value bare, as NAME=value, quoted
	// for JSON, percent-encoded, and as Basic authorization; last, as
	// its error.
	var output strings.Builder
	var unwanted []string
	for name, v := range secrets {
		q, _ := json.Marshal(v)
		b64 := base64.StdEncoding.EncodeToString([]byte(v))
		fmt.Fprintf(&output, "%s\n%s=%s\n{\"token\": %s}\nGET https://api.example/?t=%s\nAuthorization: Basic %s\n",
			v, name, v, q, url.QueryEscape(v), b64)
		unwanted = append(unwanted, b64)
	}
	for _, v := range secrets {
		fmt.Fprintf(&output, "error: the API refused %s\n", v)
	}
	ts.call(t, "POST", "/1.0/move-to-top", url.Values{"path": {"scrape/bills"}})
	job := runJob(t, ts, "m1", output.String(), "1")

	_, l := ts.call(t, "GET", "/1.0/lorry/scrape/bills", nil)
	if msg, _ := l["last_run_error"].(string); !strings.Contains(msg, "error: the API refused ***") {
		t.Errorf("last_run_error = %q; want the scraper's error, its secret hidden", msg)
	}
	_, j := ts.call(t, "GET", fmt.Sprintf("/1.0/job/%d", job), nil)
	if out, _ := j["output"].(string); !strings.Contains(out, "TOKEN=***") {
		t.Errorf("job output = %q; want TOKEN=***", out)
	}
	b := newBrowser(t, ts)
	shown := map[string]string{
		"job":           rawGet(t, ts.url+fmt.Sprintf("/1.0/job/%d", job)),
		"job output":    rawGet(t, ts.url+fmt.Sprintf("/1.0/job-output/%d", job)),
		"lorry":         rawGet(t, ts.url+"/1.0/lorry/scrape/bills"),
		"lorries":       rawGet(t, ts.url+"/1.0/lorries"),
		"status":        rawGet(t, ts.url+"/1.0/status"),
		"notifications": rawGet(t, ts.url+"/1.0/notifications"),
		"job page":      b.page(fmt.Sprintf("/1.0/job-html/%d", job), 200),
		"lorry page":    b.page("/1.0/lorry-html/scrape/bills", 200),
		"status page":   b.page("/1.0/status-html", 200),
		"notes page":    b.page("/1.0/notifications-html", 200),
	}
	onDisk, err := os.ReadFile(ts.StatusHTML)
	if err != nil {
		t.Fatal(err)
	}
	shown["status page on disk"] = string(onDisk)
	shown["log"] = logs.String()
	if !strings.Contains(shown["notifications"], "job-failed") {
		t.Errorf("no job-failed notification: %.500s", shown["notifications"])
	}
	for where, text := range shown {
		for _, s := range append(unwanted, "S3cret") {
			if i := strings.Index(text, s); i >= 0 {
				t.Errorf("%s shows %q: …%s…", where, s, text[max(0, i-60):min(len(text), i+60)])
			}
		}
	}
}

// lockedWriter is a buffer that a logger may write from many goroutines.
type lockedWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
