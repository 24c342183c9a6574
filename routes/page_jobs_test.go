package routes

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

func TestJobListPages(t *testing.T) {
	ts := newTestServer(t)
	var paths []string
	for i := range 120 {
		paths = append(paths, fmt.Sprintf("l/%03d", i))
	}
	ts.configure(t, paths...)
	for i := range 120 {
		runJob(t, ts, fmt.Sprint("m", i), "", "0")
	}
	b := newBrowser(t, ts)
	ids := regexp.MustCompile(`<td data-label="Job"><a href="/1.0/job-html/(\d+)">`)
	list := func(q string) (string, string, int, string) {
		body := b.page("/1.0/list-jobs-html"+q, 200)
		m := ids.FindAllStringSubmatch(body, -1)
		if len(m) == 0 {
			return "", "", 0, body
		}
		return m[0][1], m[len(m)-1][1], len(m), body
	}
	if f, l, n, body := list(""); f != "120" || l != "71" || n != 50 || !strings.Contains(body, `href="/1.0/list-jobs-html?before=71"`) || strings.Contains(body, "after=") {
		t.Errorf("newest page = %s…%s (%d); want 120…71 with a link to older jobs only", f, l, n)
	}
	if f, l, n, body := list("?before=71"); f != "70" || l != "21" || n != 50 || !strings.Contains(body, `href="/1.0/list-jobs-html?after=70"`) {
		t.Errorf("second page = %s…%s (%d); want 70…21 with a link to newer jobs", f, l, n)
	}
	if f, l, n, _ := list("?before=21"); f != "20" || l != "1" || n != 20 {
		t.Errorf("last page = %s…%s (%d); want 20…1", f, l, n)
	}
	if f, l, n, _ := list("?after=20"); f != "70" || l != "21" || n != 50 {
		t.Errorf("page after 20 = %s…%s (%d); want 70…21", f, l, n)
	}
	if f, _, n, _ := list("?path=l/11"); f != "120" || n != 10 {
		t.Errorf("jobs of l/11* = from %s (%d); want 10 from 120", f, n)
	}
}
