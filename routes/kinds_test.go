package routes

import (
	"net/url"
	"testing"
)

// TestGiveMeJobKinds hands a minion only the kinds of entry it takes, and
// refuses kinds that are none.
func TestGiveMeJobKinds(t *testing.T) {
	ts := newTestServer(t)
	ts.configure(t, "a/b")
	ask := func(name, kinds string) (int, map[string]any) {
		return ts.call(t, "POST", "/1.0/give-me-job", url.Values{"minion": {name}, "host": {"h"}, "pid": {"1"}, "kinds": {kinds}})
	}
	for _, bad := range []string{"tarball", "lorry,scrapers", "LORRY"} {
		if code, a := ask("m0", bad); code != 400 {
			t.Errorf("give-me-job with kinds %q = %d %v; want 400", bad, code, a)
		}
	}
	if code, a := ask("m1", "scraper"); code != 204 {
		t.Errorf("give-me-job of a scraper-only minion with only a lorry due = %d %v; want 204", code, a)
	}
	if code, a := ask("m2", " lorry , lorry"); code != 200 || a["path"] != "a/b" {
		t.Errorf("give-me-job of a lorry-only minion = %d %v; want a/b", code, a)
	}
}
