package minion

import (
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestKinds has a minion that takes lorries only ask for work: it tells
// give-me-job so, and a scraper it is handed all the same (by a WEBAPP from
// before kinds) fails without running. A minion of both kinds says nothing.
func TestKinds(t *testing.T) {
	f := newFakeWebapp(t)
	ranFile := filepath.Join(t.TempDir(), "ran")
	lorry := writeLorry(t, "touch "+sh(ranFile))
	_, cfg := newTestMinion(t, f, lorry)
	cfg.Kinds = []string{KindLorry}
	m := New(cfg, &http.Client{Timeout: 10 * time.Second}, slog.New(slog.NewTextHandler(t.Output(), nil)))
	f.giveMeJob = oneJob(jobAnswer(4, "scrape/x", KindScraper, "{}", ""))
	if ran, err := runOnce(t, t.Context(), m); !ran || err != nil {
		t.Fatalf("RunOnce: got %v, %v; want true, nil", ran, err)
	}
	if got := f.routeRequests("give-me-job")[0].Form.Get("kinds"); got != "lorry" {
		t.Errorf("give-me-job kinds: got %q, want lorry", got)
	}
	updates := f.routeRequests("job-update")
	if len(updates) != 1 || updates[0].Form.Get("exit") != "1" || !strings.Contains(updates[0].Form.Get("stderr"), `does not take "scraper" jobs`) {
		t.Errorf("job-updates: got %+v, want one failing the scraper untried", updates)
	}
	if _, err := os.Stat(ranFile); err == nil {
		t.Error("a job ran, want none run")
	}

	f2 := newFakeWebapp(t)
	m2, _ := newTestMinion(t, f2, lorry)
	f2.giveMeJob = oneJob(jobAnswer(5, "delta/x", KindLorry, "{}", ""))
	if ran, err := runOnce(t, t.Context(), m2); !ran || err != nil {
		t.Fatalf("RunOnce: got %v, %v; want true, nil", ran, err)
	}
	if form := f2.routeRequests("give-me-job")[0].Form; form.Has("kinds") {
		t.Errorf("give-me-job of a minion of both kinds sent kinds %q, want none", form.Get("kinds"))
	}
}
