package browsertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"lorrycontroller.dev/lc/statedb/dbtest"
)

var screenshots = flag.String("screenshots", "", "save the screenshots of the pages into this `directory`")

// waitLimit bounds every wait: a page that is not right by then is wrong.
const waitLimit = 30 * time.Second

var (
	binDir    string
	buildErr  error
	chromium  string
	browseErr error
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "lorry-controller-browsertest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binDir = dir
	var wg sync.WaitGroup
	var mu sync.Mutex
	for bin, pkg := range map[string]string{
		"lorry-controller-webapp": "lorrycontroller.dev/lc/cmd/webapp",
		"lorry-controller-minion": "lorrycontroller.dev/lc/cmd/minion",
	} {
		wg.Go(func() {
			out, err := exec.Command("go", "build", "-o", filepath.Join(dir, bin), pkg).CombinedOutput()
			if err != nil {
				mu.Lock()
				buildErr = errors.Join(buildErr, fmt.Errorf("go build %s: %v\n%s", pkg, err, out))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	chromium, browseErr = findChromium()
	return dbtest.Run(m)
}

// findChromium finds Debian's Chromium. The tests fail without it rather
// than skip: a skipped browser test would hide a page that does not work.
func findChromium() (string, error) {
	if p, err := exec.LookPath("chromium"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium", nil
	}
	return "", errors.New("no Chromium found (neither chromium in PATH nor /usr/bin/chromium): " +
		"the browser tests need it; install the Debian package chromium (apt-get install chromium)")
}

// --- the WEBAPP and its minion ---

// site is a WEBAPP on a free port with its own state, CONFGIT and status
// file, and maybe a minion.
type site struct {
	t          *testing.T
	dir        string
	url        string
	statedb    string // the WEBAPP's --statedb
	statusHTML string
	// token, if set, is the admin token that api sends.
	token string
}

var gitEnv = []string{
	"GIT_AUTHOR_NAME=Browser test", "GIT_AUTHOR_EMAIL=browser@example.invalid",
	"GIT_COMMITTER_NAME=Browser test", "GIT_COMMITTER_EMAIL=browser@example.invalid",
	"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
}

// The configuration of every test: a lorry that fails at once, one that
// works until it is stopped, and one whose name and spec are hostile.
const (
	confFile  = `[{"type": "lorries", "prefix": "upstream", "globs": ["*.lorry"], "interval": "1h", "lorry-timeout": "2h"}]`
	lorryFile = `{
  "broken": {"type": "git", "url": "https://git.example.invalid/broken.git"},
  "slow": {"type": "git", "url": "https://mirror:hunter2@git.example.invalid/slow.git"},
  "x<img src=x onerror=window.pwned=1>": {"type": "git", "url": "https://git.example.invalid/x.git",
    "refspecs": ["refs/heads/<script>window.pwned=2</script>"]}
}
`
	hostilePath = "upstream/x<img src=x onerror=window.pwned=1>"
)

// lorryScript stands in for lorry: the broken spec fails at once, with an
// error of many lines, a
// progress spec rewrites one progress line every fifth of a second, and any
// other prints a line every fifth of a second, each until it is killed.
const lorryScript = `#!/bin/sh
for spec; do :; done
case $(cat "$spec") in
*broken*)
	echo "Fetching origin"
	# Longer than the error boxes of the pages show without scrolling.
	for i in 1 2 3 4 5 6 7 8 9 10 11 12; do echo "remote: line $i of what the server said" >&2; done
	echo "fatal: repository 'https://git.example.invalid/broken.git/' not found" >&2
	exit 1;;
*progress*)
	# A progress meter and nothing else: one line that carriage returns
	# rewrite, never ended.
	i=0
	while :; do
		i=$((i % 60 + 1))
		printf 'Counting: %d%% (%d/60)\r' $((i * 100 / 60)) $i
		sleep 0.2
	done;;
esac
i=0
while [ $i -lt 1500 ]; do
	i=$((i+1))
	echo "Receiving objects: $i <b>done</b>"
	sleep 0.2
done
`

// newSite starts a WEBAPP that asks for no token.
func newSite(t *testing.T) *site {
	t.Helper()
	return startSite(t, "--insecure-no-auth")
}

func startSite(t *testing.T, flags ...string) *site {
	t.Helper()
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	dir := t.TempDir()
	s := &site{t: t, dir: dir, statusHTML: filepath.Join(dir, "www", "status.html"), statedb: dbtest.Place(t)}
	conf := filepath.Join(dir, "confgit")
	for name, text := range map[string]string{
		"confgit/lorry-controller.conf": confFile,
		"confgit/upstream.lorry":        lorryFile,
		"lorry":                         lorryScript,
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Dir(s.statusHTML), 0o755)
	for _, args := range [][]string{{"init", "-q", "-b", "master"}, {"add", "-A"}, {"commit", "-qm", "lorries"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = conf, append(os.Environ(), gitEnv...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	addrFile := filepath.Join(dir, "addr")
	s.start("webapp", "lorry-controller-webapp", append([]string{"--listen", "127.0.0.1:0", "--addr-file", addrFile,
		"--statedb", s.statedb, "--confgit-url", conf,
		"--configuration-directory", filepath.Join(dir, "confgit-clone"), "--status-html", s.statusHTML,
		"--ghost-timeout", "10m", "--log-level", "debug"}, flags...)...)
	deadline := time.Now().Add(waitLimit)
	for {
		if addr, err := os.ReadFile(addrFile); err == nil && bytes.HasSuffix(addr, []byte("\n")) {
			s.url = "http://" + strings.TrimSpace(string(addr))
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("the WEBAPP wrote no address within %v", waitLimit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// start runs a binary until the test ends, logging into DIR/NAME.log, which
// the test shows if it fails.
func (s *site) start(name, bin string, args ...string) {
	t := s.t
	logPath := filepath.Join(s.dir, name+".log")
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(binDir, bin), args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(waitLimit):
			cmd.Process.Kill()
			<-done
		}
		log.Close()
		if t.Failed() {
			data, _ := os.ReadFile(logPath)
			if len(data) > 16<<10 {
				data = data[len(data)-16<<10:]
			}
			t.Logf("--- %s.log ---\n%s", name, data)
		}
	})
}

func (s *site) startMinion(flags ...string) {
	s.start("minion", "lorry-controller-minion", append([]string{"--webapp-url", s.url, "--name", "builder-1",
		"--sleep", "100ms", "--update-interval", "200ms", "--kill-grace", "2s",
		"--working-area", filepath.Join(s.dir, "work"), "--lorry-cmd", filepath.Join(s.dir, "lorry")}, flags...)...)
}

// createToken makes a token of role with the WEBAPP's token subcommand
// and answers its secret.
func (s *site) createToken(role, name string) string {
	s.t.Helper()
	out, err := exec.Command(filepath.Join(binDir, "lorry-controller-webapp"), "token", "create",
		"--statedb", s.statedb, "--role", role, "--name", name).Output()
	if err != nil {
		s.t.Fatalf("token create --role %s: %v", role, err)
	}
	return strings.TrimSpace(string(out))
}

// commitConf writes files into CONFGIT and commits them, for the next
// read-configuration to find.
func (s *site) commitConf(files map[string]string) {
	s.t.Helper()
	conf := filepath.Join(s.dir, "confgit")
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(conf, name), []byte(text), 0o644); err != nil {
			s.t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"add", "-A"}, {"commit", "-qm", "more"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = conf, append(os.Environ(), gitEnv...)
		if out, err := cmd.CombinedOutput(); err != nil {
			s.t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

// api calls the WEBAPP as curl would, without any browser's headers, and
// decodes its JSON answer.
func (s *site) api(method, path string, form url.Values) map[string]any {
	s.t.Helper()
	req, _ := http.NewRequest(method, s.url+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil || resp.StatusCode >= 400 {
		s.t.Fatalf("%s %s = %d %s", method, path, resp.StatusCode, body)
	}
	return m
}

// waitAPI polls path until ok says its answer is what the test waits for.
func (s *site) waitAPI(path, what string, ok func(map[string]any) bool) map[string]any {
	s.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		m := s.api("GET", path, url.Values{})
		if ok(m) {
			return m
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("waited %v for %s; last %s answer: %v", waitLimit, what, path, m)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// --- the browser ---

// tab is a tab of a Chromium of its own, with a fresh profile.
type tab struct {
	t   *testing.T
	ctx context.Context
}

func newTab(t *testing.T) *tab {
	t.Helper()
	if browseErr != nil {
		t.Fatal(browseErr)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		// Without these Chromium reaches for the network, which a closed
		// test machine makes it wait for.
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		// Elements' computedName: the name a screen reader reads.
		chromedp.Flag("enable-blink-features", "ComputedAccessibilityInfo"),
		chromedp.UserDataDir(t.TempDir()),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(cancelTab)
	ctx, cancelTime := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(cancelTime)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatalf("start Chromium (%s): %v", chromium, err)
	}
	// Say yes to the questions the pages ask before stopping things.
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for _, err := range dialogs {
			if err != nil {
				return
			}
			chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()
	return &tab{t: t, ctx: ctx}
}

func (b *tab) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

func (b *tab) open(u string) {
	b.t.Helper()
	b.do("open "+u, chromedp.Navigate(u))
}

// eval runs a script in the page and decodes its result.
func eval[T any](b *tab, script string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](script))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", script, err)
	}
	return v
}

// waitFor polls the page until script is true. The failure shows the text
// of the page.
func (b *tab) waitFor(what, script string) {
	b.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		// A page being replaced answers with an error: not yet.
		ok, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](script))
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			text, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
			b.t.Fatalf("waited %v for %s (%s); the page says:\n%.3000s", waitLimit, what, script, text)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// press clicks the button of the form that posts to action, and waits for
// the page that the post leads to. A mark set on the old page tells the new
// one apart.
func (b *tab) press(action string) {
	b.t.Helper()
	b.do("mark the page", chromedp.Evaluate[chromedp.Void](`window.leaving = true`))
	b.do("press "+action, chromedp.Click(chromedp.CSS(fmt.Sprintf(`form[action=%q] button`, action))))
	b.waitFor("the page after "+action, `window.leaving === undefined && document.readyState === "complete"`)
}

// text is the visible text of the elements that css selects, joined.
func (b *tab) text(css string) string {
	b.t.Helper()
	return eval[string](b, fmt.Sprintf(`Array.from(document.querySelectorAll(%q)).map(e => e.innerText).join("\n")`, css))
}

// noOverflow fails if the page is wider than the screen, which on a phone
// means scrolling sideways to read it.
func (b *tab) noOverflow(where string) {
	b.t.Helper()
	wide := eval[[]int](b, `[document.documentElement.scrollWidth, window.innerWidth]`)
	if wide[0] > wide[1] {
		b.t.Errorf("%s is %dpx wide on a %dpx screen", where, wide[0], wide[1])
	}
}

// screenshot saves the page at desktop width (whole) and at phone width
// (what the screen shows first) as NAME-desktop.png and NAME-phone.png,
// into -screenshots or else a scratch directory, and checks that the page
// fits the phone's width.
func (b *tab) screenshot(name string) {
	b.t.Helper()
	dir := *screenshots
	if dir == "" {
		dir = b.t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.t.Fatal(err)
	}
	save := func(file string, data []byte, width int) {
		img, err := png.Decode(bytes.NewReader(data))
		if err != nil || img.Bounds().Dx() != width {
			b.t.Fatalf("screenshot %s: not a PNG %dpx wide: %v", file, width, err)
		}
		if err := os.WriteFile(filepath.Join(dir, file), data, 0o644); err != nil {
			b.t.Fatal(err)
		}
	}
	// The times on the page move on; let the script settle them first.
	b.do("desktop width", chromedp.EmulateViewport(1280, 900))
	b.waitFor("the page to settle", `document.readyState === "complete"`)
	full, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	save(name+"-desktop.png", full, 1280)
	b.do("phone width", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulatePortrait))
	b.noOverflow(name + " page")
	phone, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	save(name+"-phone.png", phone, 390)
	b.do("desktop width", chromedp.EmulateViewport(1280, 900))
}

// --- the tests ---

// TestReadConfigurationFromTheStatusPage opens the status page of a fresh
// WEBAPP, presses "Read configuration" and sees the lorries appear, the
// hostile one as text and never as markup, and the on-disk copy follow
// and read well from a plain web server elsewhere.
func TestReadConfigurationFromTheStatusPage(t *testing.T) {
	s := newSite(t)
	b := newTab(t)
	b.open(s.url + "/")
	b.waitFor("the status page", `location.pathname === "/1.0/status-html" && !!document.querySelector("#queue")`)
	if got := b.text("main"); !strings.Contains(got, "Not read yet") || !strings.Contains(got, "The run queue is empty") {
		t.Fatalf("fresh status page does not say the configuration is unread and the queue empty:\n%s", got)
	}
	b.press("/1.0/read-configuration-html")
	if got := eval[string](b, `location.pathname + location.search`); got != "/1.0/status-html" {
		t.Errorf("after the button the browser is at %s; want /1.0/status-html", got)
	}
	if got := b.text("#flash"); !strings.Contains(got, "Configuration read: commit") || !strings.Contains(got, "3 lorries") {
		t.Errorf("message after the button = %q; want the commit and 3 lorries", got)
	}
	rows := b.text(`#queue table td[data-label="Lorry"]`)
	for _, want := range []string{"upstream/broken", "upstream/slow", hostilePath} {
		if !strings.Contains(rows, want) {
			t.Errorf("run queue lacks %q; it shows:\n%s", want, rows)
		}
	}
	if got := eval[string](b, `typeof window.pwned`); got != "undefined" {
		t.Errorf("the hostile lorry name ran as markup: window.pwned is %s", got)
	}
	// The script shows times in the reader's zone, with the UTC time as
	// their title.
	if got := eval[string](b, `document.querySelector("#configuration time").title`); !strings.HasSuffix(got, " UTC") {
		t.Errorf("the time of the configuration has title %q; want the UTC time the script puts there", got)
	}
	if n := eval[int](b, `document.querySelectorAll("main img").length`); n != 0 {
		t.Errorf("the page has %d img elements; the hostile name made one", n)
	}
	// Its own page shows the spec, the hostile branch as text and the
	// password hidden.
	b.open(s.url + "/1.0/lorry-html/" + url.PathEscape("upstream") + "/" + url.PathEscape(strings.TrimPrefix(hostilePath, "upstream/")))
	spec := b.text("pre.spec")
	if !strings.Contains(spec, "refs/heads/<script>window.pwned=2</script>") || eval[string](b, `typeof window.pwned`) != "undefined" {
		t.Errorf("lorry page spec = %q, window.pwned %s; want the branch as text, no script run", spec, eval[string](b, `typeof window.pwned`))
	}
	b.open(s.url + "/1.0/lorry-html/upstream/slow")
	if spec := b.text("pre.spec"); strings.Contains(spec, "hunter2") || !strings.Contains(spec, "https://***@git.example.invalid/slow.git") {
		t.Errorf("lorry page spec = %q; want the password hidden", spec)
	}

	// The on-disk copy, served by a plain web server from its own
	// directory, has its style and the lorries, and no buttons.
	www := httptest.NewServer(http.FileServer(http.Dir(filepath.Dir(s.statusHTML))))
	defer www.Close()
	b.open(www.URL + "/status.html")
	b.waitFor("the on-disk copy", `!!document.querySelector("#queue")`)
	if got := b.text(`#queue table td[data-label="Lorry"]`); !strings.Contains(got, "upstream/slow") {
		t.Errorf("on-disk copy lacks the lorries; it shows:\n%s", got)
	}
	if bg := eval[string](b, `getComputedStyle(document.querySelector("header")).backgroundColor`); bg != "rgb(30, 42, 59)" {
		t.Errorf("on-disk copy header background %s; want the style sheet's rgb(30, 42, 59)", bg)
	}
	if n := eval[int](b, `document.forms.length`); n != 0 {
		t.Errorf("on-disk copy has %d forms; want none", n)
	}
}

// TestRunningJobOutputGrowsAndStops opens the page of a running job, sees
// its output grow without the page reloading, stops it with the button
// and sees it end as killed; on the way it saves the screenshots.
func TestRunningJobOutputGrowsAndStops(t *testing.T) {
	s := newSite(t)
	s.api("POST", "/1.0/read-configuration", url.Values{})
	s.startMinion()
	s.waitAPI("/1.0/lorry/upstream/broken", "the broken lorry to fail", func(m map[string]any) bool { return m["last_run_exit"] == 1.0 })
	l := s.waitAPI("/1.0/lorry/upstream/slow", "the slow lorry to run", func(m map[string]any) bool { return m["running_job"] != nil })
	id := int64(l["running_job"].(float64))
	s.waitAPI(fmt.Sprintf("/1.0/job/%d", id), "output", func(m map[string]any) bool { return strings.Count(m["output"].(string), "\n") >= 5 })

	b := newTab(t)
	b.open(s.url + "/1.0/status-html")
	if got := b.text("#running table"); !strings.Contains(got, "upstream/slow") || !strings.Contains(got, "Receiving objects") {
		t.Errorf("status page does not show the running job and its latest line:\n%s", got)
	}
	if got := b.text("#failing table"); !strings.Contains(got, "upstream/broken") || !strings.Contains(got, "not found") {
		t.Errorf("status page does not show the failing lorry and its error:\n%s", got)
	}
	// The charts are drawn: the one job that ended, in the hour it ended,
	// and the default queue's wait, sampled when the WEBAPP started.
	if got := eval[[]int](b, `[document.querySelectorAll("#jobs-per-hour svg rect.bar.k-failed").length,
		document.querySelectorAll("#jobs-per-hour svg rect.bar").length, document.querySelectorAll("#jobs-per-hour g.column").length,
		document.querySelectorAll("#queue-waits svg polyline").length]`); fmt.Sprint(got) != "[1 1 24 1]" {
		t.Errorf("status page charts: failed bars, bars, hours, queue lines = %v; want [1 1 24 1]", got)
	}
	if got := eval[float64](b, `document.querySelector("#jobs-per-hour svg").getBoundingClientRect().height`); got < 60 {
		t.Errorf("the jobs per hour chart is %gpx high; want it drawn", got)
	}
	b.screenshot("status")
	b.open(fmt.Sprintf("%s/1.0/lorry-html/upstream/broken", s.url))
	if got := eval[[]int](b, `[document.querySelectorAll("#runs-chart svg rect.bar").length,
		document.querySelectorAll("#runs-chart svg rect.bar.k-failed").length]`); fmt.Sprint(got) != "[1 1]" {
		t.Errorf("lorry page strip: bars, failed bars = %v; want [1 1]", got)
	}
	if got := b.text("#runs-chart figcaption"); !strings.Contains(got, "The last 1 run, oldest first: 1 failed.") {
		t.Errorf("lorry page strip summary = %q", got)
	}
	b.screenshot("lorry")

	b.open(fmt.Sprintf("%s/1.0/job-html/%d", s.url, id))
	b.do("mark the page", chromedp.Evaluate[chromedp.Void](`window.stayed = true`))
	before := eval[int](b, `document.getElementById("output").textContent.length`)
	b.waitFor("the output to grow by three lines", fmt.Sprintf(
		`window.stayed === true && document.getElementById("output").textContent.length > %d &&
		 document.getElementById("output").textContent.split("\n").length > %d`,
		before, strings.Count(eval[string](b, `document.getElementById("output").textContent`), "\n")+3))
	if got := b.text(`[data-field="status"]`); got != "running" {
		t.Errorf("status of the running job reads %q; want running", got)
	}
	if eval[bool](b, `document.getElementById("output").innerHTML.includes("<b>")`) {
		t.Errorf("output was added as markup")
	}
	b.screenshot("job")

	b.press("/1.0/stop-job-html")
	if got := b.text("#flash"); !strings.Contains(got, fmt.Sprintf("Asked the minion of job %d to kill it", id)) {
		t.Errorf("message after Stop = %q", got)
	}
	b.do("mark the page", chromedp.Evaluate[chromedp.Void](`window.stayed = true`))
	b.waitFor("the job to end as killed", `document.querySelector('[data-field="status"]').textContent === "killed"`)
	if got := b.text(`[data-field="exit"]`); !strings.Contains(got, "killed by SIG") {
		t.Errorf("exit of the stopped job reads %q; want killed by a signal", got)
	}
	if !eval[bool](b, `window.stayed === true && !document.querySelector('[data-when="ended"]').hidden && document.querySelector('[data-when="running"]').hidden`) {
		t.Errorf("the page did not turn to the ended job in place: no Remove button, or the Stop button still there")
	}
	if j := s.api("GET", fmt.Sprintf("/1.0/job/%d", id), url.Values{}); j["status"] != "killed" {
		t.Errorf("job %d is %v; want killed", id, j["status"])
	}
}

// TestPagesWorkWithoutJavaScript reads the pages with scripts off: times
// still read in UTC with how long ago, and the buttons still work.
func TestPagesWorkWithoutJavaScript(t *testing.T) {
	s := newSite(t)
	s.api("POST", "/1.0/read-configuration", url.Values{})
	b := newTab(t)
	if _, err := chromedp.Call(b.ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
		t.Fatal(err)
	}
	b.open(s.url + "/1.0/status-html")
	if got := b.text("#configuration p"); !regexp.MustCompile(` UTC \((now|\d+ \w+ ago)\)`).MatchString(got) {
		t.Errorf("without scripts the configuration time reads %q; want UTC and how long ago", got)
	}
	if eval[bool](b, `!!document.querySelector("time[title]")`) {
		t.Fatalf("the page's script ran: a time has the title it sets")
	}
	// No question is asked without scripts: the button posts at once.
	b.press("/1.0/stop-queue-html")
	if got := b.text("#queue-state"); !strings.Contains(got, "stopped") {
		t.Errorf("queue card after Stop queue reads %q; want stopped", got)
	}
	if st := s.api("GET", "/1.0/status", url.Values{}); st["running_queue"] != false {
		t.Errorf("running_queue = %v after the button; want false", st["running_queue"])
	}
	b.press("/1.0/start-queue-html")
	if got := b.text("#flash"); !strings.Contains(got, "Queue started") {
		t.Errorf("message after Start queue = %q", got)
	}
	// The filter of the run queue is a plain form.
	b.do("filter", chromedp.SetValue(chromedp.ID("path"), "slow"), chromedp.Evaluate[chromedp.Void](`window.leaving = true`),
		chromedp.Submit(chromedp.CSS(`form[role="search"]`)))
	b.waitFor("the filtered queue", `window.leaving === undefined && document.readyState === "complete"`)
	if rows := b.text(`#queue table td[data-label="Lorry"]`); rows != "upstream/slow" {
		t.Errorf("queue filtered to slow shows %q", rows)
	}
}

// TestButtonsOfAnotherSiteRefused has a page of another origin post to
// the WEBAPP through the browser, as a forged form would, and checks that
// nothing changes.
func TestButtonsOfAnotherSiteRefused(t *testing.T) {
	s := newSite(t)
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!DOCTYPE html><form method="post" action="%s/1.0/stop-queue"></form>
<script>document.forms[0].submit()</script>`, s.url)
	}))
	defer evil.Close()
	b := newTab(t)
	b.open(evil.URL)
	b.waitFor("the forged post to be answered", `location.pathname === "/1.0/stop-queue" && document.readyState === "complete"`)
	if got := b.text("body"); !strings.Contains(got, "cross-origin request refused") {
		t.Errorf("the forged post was answered %q; want a refusal", got)
	}
	if st := s.api("GET", "/1.0/status", url.Values{}); st["running_queue"] != true {
		t.Errorf("a page of another origin stopped the queue")
	}
}

// TestEveryPageAndButton visits the pages not visited above and presses
// the buttons not pressed above, each in the browser, and checks that
// every page fits a phone's width.
func TestEveryPageAndButton(t *testing.T) {
	s := newSite(t)
	s.api("POST", "/1.0/read-configuration", url.Values{})
	s.startMinion()
	s.waitAPI("/1.0/lorry/upstream/broken", "the broken lorry to fail", func(m map[string]any) bool { return m["last_run_exit"] == 1.0 })
	s.waitAPI("/1.0/lorry/upstream/slow", "the slow lorry to run", func(m map[string]any) bool { return m["running_job"] != nil })
	b := newTab(t)
	phone := func(where string) {
		b.do("phone width", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulatePortrait))
		b.noOverflow(where)
		b.do("desktop width", chromedp.EmulateViewport(1280, 900))
	}

	b.open(s.url + "/1.0/list-jobs-html")
	if got := b.text(`td[data-label="Lorry"]`); !strings.Contains(got, "upstream/broken") || !strings.Contains(got, "upstream/slow") {
		t.Errorf("job list shows %q; want both jobs", got)
	}
	phone("job list")
	b.do("filter", chromedp.SetValue(chromedp.ID("status"), "failed"), chromedp.Evaluate[chromedp.Void](`window.leaving = true`),
		chromedp.Submit(chromedp.CSS(`form[role="search"]`)))
	b.waitFor("the failed jobs", `window.leaving === undefined && document.readyState === "complete"`)
	if got := b.text(`td[data-label="Lorry"]`); got != "upstream/broken" {
		t.Errorf("failed jobs: %q; want upstream/broken", got)
	}
	b.do("open the job", chromedp.Evaluate[chromedp.Void](`window.leaving = true`), chromedp.Click(chromedp.CSS(`td[data-label="Job"] a`)))
	b.waitFor("the job page", `window.leaving === undefined && !!document.getElementById("output")`)
	if got := b.text("#output"); !strings.Contains(got, "not found") {
		t.Errorf("output of the failed job: %q", got)
	}
	phone("job page")
	b.press("/1.0/remove-job-html")
	if got := eval[string](b, `location.pathname`); got != "/1.0/list-jobs-html" || !strings.Contains(b.text("#flash"), "Removed job 1") {
		t.Errorf("after Remove job: at %s, message %q; want the job list and Removed job 1", got, b.text("#flash"))
	}

	b.open(s.url + "/1.0/lorry-html/" + url.PathEscape("upstream") + "/" + url.PathEscape(strings.TrimPrefix(hostilePath, "upstream/")))
	phone("lorry page")
	b.press("/1.0/move-to-bottom-html")
	if got := b.text("table.facts"); !strings.Contains(got, "3 of 3") || !strings.Contains(b.text("#flash"), "to the bottom") {
		t.Errorf("after Move to bottom the page reads %q", got)
	}
	b.press("/1.0/move-to-top-html")
	if got := b.text("table.facts"); !strings.Contains(got, "1 of 3") || !strings.Contains(b.text("#flash"), "to the top") {
		t.Errorf("after Move to top the page reads %q", got)
	}

	b.open(s.url + "/1.0/status-html")
	b.do("max jobs", chromedp.SetValue(chromedp.CSS(`input[name="max_jobs"]`), "2"))
	b.press("/1.0/set-max-jobs-html")
	if got := b.text(".card.run .v"); got != "1 of 2" || !strings.Contains(b.text("#flash"), "Max jobs set to 2.") {
		t.Errorf("after Set max jobs the card reads %q and the message %q", got, b.text("#flash"))
	}
	if st := s.api("GET", "/1.0/get-max-jobs", url.Values{}); st["max_jobs"] != 2.0 {
		t.Errorf("max_jobs = %v; want 2", st["max_jobs"])
	}

	b.open(s.url + "/1.0/minions-html")
	if got := b.text("tbody"); !strings.Contains(got, "builder-1") || !strings.Contains(got, "busy") || !strings.Contains(got, "upstream/slow") {
		t.Errorf("minions page reads %q; want builder-1 busy with upstream/slow", got)
	}
	phone("minions page")
	b.press("/1.0/remove-ghost-jobs-html")
	if got := b.text("#flash"); !strings.Contains(got, "No ghost jobs") {
		t.Errorf("after Remove ghost jobs: %q", got)
	}

	b.open(s.url + "/1.0/hosts-html")
	phone("hosts page")
	b.press("/1.0/force-ls-hosts-html")
	if got := b.text("#flash"); got != "No upstream hosts to list." {
		t.Errorf("after List hosts now: %q", got)
	}
}

// TestSignInCSRFAndSignOut signs in with an admin token made by the token
// subcommand, uses a button, sees a form with a forged CSRF token refused,
// and signs out, in the browser.
func TestSignInCSRFAndSignOut(t *testing.T) {
	s := startSite(t)
	out, err := exec.Command(filepath.Join(binDir, "lorry-controller-webapp"), "token", "create",
		"--statedb", s.statedb, "--role", "admin", "--name", "ops").Output()
	if err != nil {
		t.Fatalf("token create: %v", err)
	}
	s.token = strings.TrimSpace(string(out))
	b := newTab(t)
	b.open(s.url + "/1.0/status-html")
	b.waitFor("the status page", `!!document.querySelector("#queue")`)
	if n := eval[int](b, `document.querySelectorAll('form[method="post"]').length`); n != 0 {
		t.Errorf("before signing in the page has %d buttons; want none", n)
	}
	b.do("follow the sign-in link", chromedp.Evaluate[chromedp.Void](`window.leaving = true`),
		chromedp.Click(chromedp.CSS(`header .who a`)))
	b.waitFor("the sign-in page", `window.leaving === undefined && !!document.getElementById("token")`)
	b.do("sign in", chromedp.SetValue(chromedp.ID("token"), s.token), chromedp.Evaluate[chromedp.Void](`window.leaving = true`),
		chromedp.Submit(chromedp.ID("token")))
	b.waitFor("the status page again", `window.leaving === undefined && document.readyState === "complete" && !!document.querySelector("#queue")`)
	if got := b.text("#flash"); got != "Signed in as ops (admin)." {
		t.Errorf("message after signing in: %q", got)
	}
	if got := b.text("header .who"); !strings.Contains(got, "ops (admin)") || !strings.Contains(got, "Sign out") {
		t.Errorf("the header reads %q; want who signed in, and Sign out", got)
	}
	cookies, err := chromedp.Call(b.ctx, network.GetCookies, network.GetCookiesParams{})
	if err != nil {
		t.Fatal(err)
	}
	var session *network.Cookie
	for _, c := range cookies.Cookies {
		if c.Name == "lorry_controller_session" {
			session = c
		}
	}
	if session == nil || !session.HTTPOnly || session.SameSite != network.CookieSameSiteStrict {
		t.Fatalf("session cookie %+v; want HttpOnly and SameSite=Strict", session)
	}
	if eval[string](b, `document.cookie`) != "" {
		t.Errorf("a script reads the cookies: %q", eval[string](b, `document.cookie`))
	}

	b.press("/1.0/read-configuration-html")
	if got := b.text("#flash"); !strings.Contains(got, "Configuration read: commit") {
		t.Errorf("message after Read configuration: %q", got)
	}
	// A form whose CSRF token is not the session's is refused, as a
	// forged one would be.
	b.do("forge", chromedp.Evaluate[chromedp.Void](
		`document.querySelector('form[action="/1.0/stop-queue-html"] input[name="csrf"]').value = "forged"`))
	b.press("/1.0/stop-queue-html")
	if got := b.text("main"); !strings.Contains(got, "403") || !strings.Contains(got, "forged") {
		t.Errorf("the forged form was answered %q; want a refusal", got)
	}
	if st := s.api("GET", "/1.0/status", url.Values{}); st["running_queue"] != true {
		t.Errorf("a form with a forged CSRF token stopped the queue")
	}

	b.open(s.url + "/1.0/status-html")
	b.press("/1.0/sign-out-html")
	if got := b.text("#flash"); got != "Signed out." {
		t.Errorf("message after signing out: %q", got)
	}
	if n := eval[int](b, `document.querySelectorAll('main form[method="post"]').length`); n != 0 || b.text("header .who") != "Sign in" {
		t.Errorf("after signing out: %d buttons, header %q; want none, and Sign in", n, b.text("header .who"))
	}
	// The session is over on the server: its cookie, put back, is worth
	// nothing.
	if _, err := chromedp.Call(b.ctx, network.SetCookie, network.SetCookieParams{Name: session.Name, Value: session.Value, URL: s.url + "/"}); err != nil {
		t.Fatal(err)
	}
	b.open(s.url + "/1.0/status-html")
	if n := eval[int](b, `document.querySelectorAll('main form[method="post"]').length`); n != 0 {
		t.Errorf("the signed-out session's cookie still shows %d buttons", n)
	}
}
