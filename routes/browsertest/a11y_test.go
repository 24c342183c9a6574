package browsertest

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// The widths the pages are read at: a desktop's and a small phone's.
const (
	desktopWidth = 1280
	phoneWidth   = 375
)

func (b *tab) width(w int) {
	b.t.Helper()
	if w < 720 {
		b.do("phone width", chromedp.EmulateViewport(int64(w), 812, chromedp.EmulateMobile, chromedp.EmulatePortrait))
	} else {
		b.do("desktop width", chromedp.EmulateViewport(int64(w), 900))
	}
}

// problems runs script, which answers a list of what is wrong, and fails
// the test with each.
func (b *tab) problems(where, what, script string) {
	b.t.Helper()
	for _, p := range eval[[]string](b, script) {
		b.t.Errorf("%s: %s: %s", where, what, p)
	}
}

// shownTextJS defines shown(el): the text of el that the screen shows,
// without text only for those who do not see it.
const shownTextJS = `const shown = el => {
	let s = "";
	const w = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
	for (let n = w.nextNode(); n; n = w.nextNode()) {
		const p = n.parentElement;
		if (p.closest(".vh, [aria-hidden=true], [hidden]") || !p.getClientRects().length) continue;
		s += n.textContent;
	}
	return s.replace(/\s+/g, " ").trim();
};`

// namesJS lists the controls whose names a screen reader reads alike
// while they act on different things, the controls with no name, the
// boxes that scroll but take no focus, and the header cells with no text. What a control acts on is its link, or its
// form's action and fields.
const namesJS = `(() => {
	const problems = [], byName = new Map();
	for (const el of document.querySelectorAll('a[href], button, input:not([type=hidden]), select, textarea, [tabindex]:not([tabindex="-1"])')) {
		if (!el.getClientRects().length) continue;
		const name = (el.computedName || "").replace(/\s+/g, " ").trim();
		if (!name) { problems.push("a control with no name: " + el.outerHTML.slice(0, 200)); continue; }
		let does;
		if (el.form) {
			const fields = Array.from(el.form.elements).filter(f => f.type === "hidden" && f.name !== "csrf" && f.name !== "back");
			does = "posts " + el.form.getAttribute("action") + "?" + fields.map(f => f.name + "=" + f.value).join("&") +
				(el.tagName === "BUTTON" ? "" : " with " + el.name);
		} else if (el.href) {
			does = "goes to " + el.href;
		} else {
			does = "is " + el.outerHTML.slice(0, 80);
		}
		const k = name.toLowerCase();
		if (!byName.has(k)) byName.set(k, new Set());
		byName.get(k).add(does);
	}
	for (const [name, does] of byName) {
		if (does.size > 1) problems.push(does.size + ' controls are called "' + name + '": ' + Array.from(does).join("; "));
	}
	// A box of bounded height that scrolls what it holds takes the
	// focus, so that a keyboard can scroll it, and says what it holds.
	for (const el of document.querySelectorAll("body *")) {
		const st = getComputedStyle(el);
		if (st.maxHeight === "none" || !["auto", "scroll"].includes(st.overflowY)) continue;
		if (el.tabIndex < 0 || !el.computedName) problems.push("a box that scrolls takes no focus or has no name: " + el.outerHTML.slice(0, 160));
	}
	for (const th of document.querySelectorAll("th")) {
		if (!th.textContent.trim()) problems.push("a header cell with no text: " + th.closest("tr").outerHTML.slice(0, 200));
	}
	return problems;
})()`

// phoneJS lists, at a phone's width, what runs off the screen, the rows of
// the cards that lists become that are empty, and the rows that show
// their label twice.
const phoneJS = `(() => {
	` + shownTextJS + `
	const problems = [], vw = document.documentElement.clientWidth;
	for (const el of document.querySelectorAll("body *")) {
		if (el.closest(".vh, a.skip")) continue;
		// What a scrolling box holds is read by scrolling it.
		let clip = el.parentElement;
		while (clip && !["auto", "scroll", "hidden"].includes(getComputedStyle(clip).overflowX)) clip = clip.parentElement;
		if (clip && clip !== document.body && clip !== document.documentElement) continue;
		const r = el.getBoundingClientRect();
		if (!r.width || !r.height) continue;
		if (r.left < -0.5 || r.right > vw + 0.5) {
			problems.push("runs off the " + vw + "px screen from " + Math.round(r.left) + " to " + Math.round(r.right) + "px: " +
				el.outerHTML.slice(0, 160));
		}
	}
	for (const td of document.querySelectorAll("table.list td[data-label]")) {
		if (!td.getClientRects().length) continue;
		const label = td.dataset.label, text = shown(td);
		if (!text) problems.push('an empty "' + label + '" row in the card of ' + shown(td.closest("tr")).slice(0, 80));
		if (label && text.toLowerCase().startsWith(label.toLowerCase() + " ")) {
			problems.push('the "' + label + '" row says its label twice: ' + label + " " + text.slice(0, 80));
		}
	}
	return problems;
})()`

// TestPagesAccessible reads every page, signed out and signed in as an
// admin, at a desktop's and a phone's width, and has axe-core check each:
// no critical or serious violation. At the desktop's width no two
// controls that act on different things share a name and no header cell is
// empty; at the phone's, nothing runs off the screen, no card has an empty
// row and none says a label twice.
func TestPagesAccessible(t *testing.T) {
	s := startSite(t)
	s.token = s.createToken("admin", "ops")
	minionToken := filepath.Join(s.dir, "minion.token")
	if err := os.WriteFile(minionToken, []byte(s.createToken("minion", "builder")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// An Upstream Host that cannot be listed, for the hosts' error boxes,
	// and a host limit, for the minions page's.
	s.commitConf(map[string]string{"lorry-controller.conf": `[
  {"type": "lorries", "prefix": "upstream", "globs": ["*.lorry"], "interval": "1h", "lorry-timeout": "2h"},
  {"type": "gitea", "host": "git.example.invalid", "protocol": "https", "prefix": "gitea", "interval": "1h", "ls-interval": "1h"}
]`})
	s.api("POST", "/1.0/read-configuration", url.Values{})
	s.api("POST", "/1.0/force-ls-hosts", url.Values{})
	s.startMinion("--token-file", minionToken)
	s.waitAPI("/1.0/lorry/upstream/broken", "the broken lorry to fail", func(m map[string]any) bool { return m["last_run_exit"] == 1.0 })
	l := s.waitAPI("/1.0/lorry/upstream/slow", "the slow lorry to run", func(m map[string]any) bool { return m["running_job"] != nil })
	running := int64(l["running_job"].(float64))
	// Two capped hosts besides the minion's: the minions page lists them
	// with a form each.
	for _, h := range []string{"build-a.example", "build-b.example"} {
		s.api("POST", "/1.0/set-host-max-jobs", url.Values{"host": {h}, "max_jobs": {"2"}})
	}

	pages := []string{
		"/1.0/status-html", "/1.0/lorry-html/upstream/broken", "/1.0/lorry-html/upstream/slow",
		"/1.0/lorry-html/upstream/" + url.PathEscape(strings.TrimPrefix(hostilePath, "upstream/")),
		"/1.0/job-html/1", fmt.Sprintf("/1.0/job-html/%d", running), "/1.0/list-jobs-html",
		"/1.0/hosts-html", "/1.0/minions-html", "/1.0/notifications-html", "/1.0/sign-in-html",
		"/1.0/lorry-html/upstream/none", // the error page
	}
	b := newTab(t)
	for _, signedIn := range []bool{false, true} {
		who := "signed out"
		if signedIn {
			who = "signed in"
			b.open(s.url + "/1.0/sign-in-html")
			b.do("sign in", chromedp.SetValue(chromedp.ID("token"), s.token), chromedp.Evaluate[chromedp.Void](`window.leaving = true`),
				chromedp.Submit(chromedp.ID("token")))
			b.waitFor("the page after signing in", `window.leaving === undefined && document.readyState === "complete"`)
			if got := b.text("header .who"); !strings.Contains(got, "ops (admin)") {
				t.Fatalf("not signed in: the header reads %q", got)
			}
		}
		for _, w := range []int{desktopWidth, phoneWidth} {
			b.width(w)
			for _, p := range pages {
				where := fmt.Sprintf("%s, %s, %dpx", p, who, w)
				b.open(s.url + p)
				b.waitFor(where, `document.readyState === "complete"`)
				b.axe(where)
				if w == desktopWidth {
					b.problems(where, "names", namesJS)
				} else {
					b.problems(where, "at a phone's width", phoneJS)
				}
			}
		}
		b.width(desktopWidth)
	}
	// The pages had what they were to be checked with.
	b.open(s.url + "/1.0/hosts-html")
	if n := eval[int](b, `document.querySelectorAll("pre.err").length`); n == 0 {
		t.Errorf("the hosts page shows no listing error; the check of its error box checked nothing")
	}
	b.open(s.url + "/1.0/lorry-html/upstream/broken")
	if n := eval[int](b, `document.querySelectorAll("pre.err").length`); n == 0 {
		t.Errorf("the broken lorry's page shows no last error; the check of its error box checked nothing")
	}
}

// key presses keys, each a real key event: "\t" is Tab, "\r" Enter.
func (b *tab) key(keys string, opts ...chromedp.KeyOption) {
	b.t.Helper()
	b.do(fmt.Sprintf("press %q", keys), chromedp.KeyEvent(keys, opts...))
}

// focused is the name of the element that has the focus.
func (b *tab) focused() string {
	b.t.Helper()
	return eval[string](b, `(document.activeElement.computedName || document.activeElement.id || document.activeElement.tagName).replace(/\s+/g, " ").trim()`)
}

// tabTo presses Tab from the top of the page until the control called name
// has the focus, and answers how many presses that took.
func (b *tab) tabTo(name string) int {
	b.t.Helper()
	var seen []string
	for n := 1; n <= 200; n++ {
		b.key(kb.Tab)
		got := b.focused()
		if got == name {
			return n
		}
		seen = append(seen, got)
	}
	b.t.Fatalf("200 Tabs do not reach %q; they go through %q", name, seen)
	return 0
}

// TestKeyboard uses the pages with the keyboard alone: a skip link is the
// first stop and leads past the header, and each button pressed with
// Enter comes back with the focus on itself, or on the button that took
// its place, on the page it reloads.
func TestKeyboard(t *testing.T) {
	s := newSite(t)
	s.api("POST", "/1.0/read-configuration", url.Values{})
	// A minion that asks once, for the minions page's buttons.
	s.api("POST", "/1.0/give-me-job", url.Values{"minion": {"keyboard-1"}, "host": {"localhost"}, "pid": {"1"}})
	b := newTab(t)
	b.open(s.url + "/1.0/status-html")
	b.key(kb.Tab)
	if got, shown := b.focused(), eval[bool](b, `document.activeElement.getBoundingClientRect().width > 20`); got != "Skip to the content" || !shown {
		t.Fatalf("the first Tab reaches %q (shown: %v); want the skip link, shown", got, shown)
	}
	b.key(kb.Enter)
	b.key(kb.Tab)
	if !eval[bool](b, `document.querySelector("main").contains(document.activeElement) &&
		document.activeElement === document.querySelector("main").querySelector("a[href], button, input:not([type=hidden]), select, [tabindex='0']")`) {
		t.Errorf("Tab after the skip link reaches %q; want the first control of the content", b.focused())
	}

	for _, tc := range []struct {
		page, press, then string
	}{
		{"/1.0/status-html", "Move upstream/slow to the top", ""},
		{"/1.0/status-html", "Move " + hostilePath + " to the bottom", ""},
		{"/1.0/status-html", "Stop queue", "Start queue"},
		{"/1.0/status-html", "Start queue", "Stop queue"},
		{"/1.0/status-html", "Set max jobs", ""},
		{"/1.0/status-html", "Read configuration", ""},
		{"/1.0/lorry-html/upstream/broken", "Run now", ""},
		{"/1.0/lorry-html/upstream/broken", "Move to bottom", ""},
		{"/1.0/minions-html", "Retire minion keyboard-1", "Un-retire minion keyboard-1"},
		{"/1.0/minions-html", "Un-retire minion keyboard-1", "Retire minion keyboard-1"},
		{"/1.0/list-jobs-html", "Remove ghost jobs", ""},
	} {
		then := tc.then
		if then == "" {
			then = tc.press
		}
		b.open(s.url + tc.page)
		b.tabTo(tc.press)
		b.do("mark the page", chromedp.Evaluate[chromedp.Void](`window.leaving = true`))
		b.key(kb.Enter)
		b.waitFor("the page after "+tc.press, `window.leaving === undefined && document.readyState === "complete" && !!document.getElementById("flash")`)
		if got := b.focused(); got != then {
			t.Errorf("on %s after %s the focus is on %q; want %q", tc.page, tc.press, got, then)
		}
	}
	// The row moved to the top, and the focus with it.
	b.open(s.url + "/1.0/status-html")
	if got := b.text(`#queue tbody tr:first-child td[data-label="Lorry"]`); got != "upstream/slow" {
		t.Errorf("the first lorry of the queue is %q; want upstream/slow, moved to the top", got)
	}
}

// TestJobProgressShown follows a job that prints nothing but a progress
// meter, one line rewritten by carriage returns: its page shows the line
// as it goes, and says in a live region when the job ends.
func TestJobProgressShown(t *testing.T) {
	s := newSite(t)
	s.commitConf(map[string]string{"upstream.lorry": `{"counting": {"type": "git", "url": "https://git.example.invalid/progress.git"}}`})
	s.api("POST", "/1.0/read-configuration", url.Values{})
	s.startMinion()
	l := s.waitAPI("/1.0/lorry/upstream/counting", "the lorry to run", func(m map[string]any) bool { return m["running_job"] != nil })
	id := int64(l["running_job"].(float64))
	job := fmt.Sprintf("/1.0/job/%d", id)
	s.waitAPI(job, "the job to report progress", func(m map[string]any) bool { return strings.Contains(m["output"].(string), "Counting: ") })

	b := newTab(t)
	b.open(fmt.Sprintf("%s/1.0/job-html/%d", s.url, id))
	b.do("mark the page", chromedp.Evaluate[chromedp.Void](`window.stayed = true`))
	progress := regexp.MustCompile(`^Counting: \d+% \(\d+/60\)$`)
	b.waitFor("the progress to show", `!!document.getElementById("progress") && !document.getElementById("progress").hidden`)
	first := b.text(`#progress [data-field="progress"]`)
	if !progress.MatchString(first) {
		t.Errorf("the progress line reads %q; want Counting: N%% (M/60)", first)
	}
	if eval[bool](b, `!!document.getElementById("output-empty") && !document.getElementById("output-empty").hidden`) {
		t.Errorf("the page says %q while the job reports progress", b.text("#output-empty"))
	}
	b.waitFor("the progress to move on", fmt.Sprintf(`window.stayed === true && document.querySelector('#progress [data-field="progress"]').textContent !== %q`, first))
	if got := b.text(`#progress [data-field="progress"]`); !progress.MatchString(got) {
		t.Errorf("the progress line reads %q; want Counting: N%% (M/60)", got)
	}
	news := `document.querySelector('[role="status"]#job-news, [aria-live]#job-news')`
	if eval[string](b, news+` ? "" : "none"`) == "none" {
		t.Fatalf("the job page has no live region that says when its state changes")
	}
	s.api("POST", "/1.0/stop-job", url.Values{"job_id": {fmt.Sprint(id)}})
	b.waitFor("the live region to say the job was killed", news+`.textContent.includes("killed")`)
	if !eval[bool](b, `window.stayed === true && document.getElementById("progress").hidden`) {
		t.Errorf("the ended job's page still shows a progress line, or was reloaded")
	}
	if got := b.text("#output"); !strings.Contains(got, "Counting: ") {
		t.Errorf("the ended job's output reads %q; want its last progress line", got)
	}
}
