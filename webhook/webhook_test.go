package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"lorrycontroller.dev/lc/clock"
	"lorrycontroller.dev/lc/statedb"
	"lorrycontroller.dev/lc/statedb/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m, statedb.Migrate) }

var secret = []byte("s3cret shared with the receiver")

// request is what the receiver was sent.
type request struct {
	header http.Header
	body   []byte
}

// receiver is a webhook receiver on loopback that records every POST and
// answers with the next of its codes (200 once they run out).
type receiver struct {
	mu    sync.Mutex
	got   []request
	codes []int
	srv   *httptest.Server
}

func newReceiver(t *testing.T, codes ...int) *receiver {
	rc := &receiver{codes: codes}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, request{header: r.Header.Clone(), body: body})
		code := http.StatusOK
		if len(rc.codes) > 0 {
			code, rc.codes = rc.codes[0], rc.codes[1:]
		}
		rc.mu.Unlock()
		w.WriteHeader(code)
		io.WriteString(w, "answer of the receiver")
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) requests() []request {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]request(nil), rc.got...)
}

type fixture struct {
	db    *statedb.DB
	clock *clock.Fake
	path  string
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{clock: &clock.Fake{}, path: dbtest.Place(t)}
	f.clock.Set(100000)
	f.open(t)
	return f
}

func (f *fixture) open(t *testing.T) {
	t.Helper()
	events, err := ParseEvents("")
	if err != nil {
		t.Fatal(err)
	}
	db, err := statedb.Open(context.Background(), f.path, statedb.Options{Clock: f.clock, Notify: events})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	f.db = db
}

func (f *fixture) deliverer(url string) *Deliverer {
	return &Deliverer{DB: f.db, URL: url, Secret: secret, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Jitter: func(int64) int64 { return 0 }}
}

func (f *fixture) notify(t *testing.T, event string, payload any) {
	t.Helper()
	err := f.db.Update(context.Background(), func(tx *statedb.Tx) error {
		return tx.Notify(context.Background(), event, payload)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) deliveries(t *testing.T) []statedb.Delivery {
	t.Helper()
	var ds []statedb.Delivery
	err := f.db.View(context.Background(), func(tx *statedb.Tx) error {
		var err error
		ds, err = tx.Deliveries(context.Background(), 100)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func (f *fixture) only(t *testing.T) statedb.Delivery {
	t.Helper()
	ds := f.deliveries(t)
	if len(ds) != 1 {
		t.Fatalf("outbox holds %d deliveries; want 1: %+v", len(ds), ds)
	}
	return ds[0]
}

func runOnce(t *testing.T, d *Deliverer) {
	t.Helper()
	if err := d.runOnce(context.Background()); err != nil {
		t.Fatalf("runOnce: %v", err)
	}
}

func exit(n int64) *int64 { return &n }

var failed = statedb.JobFailed{Lorry: "upstream/gone", JobID: 7, Kind: "lorry", Status: "failed", Exit: exit(3),
	Minion: "m1", Error: "job 7 failed with exit 3:\nfatal: <repository> not found\n", ErrorClass: "gone"}

// verify checks a request as a receiver would: the signature over the
// body with the secret, and the headers against the body.
func verify(t *testing.T, r request) map[string]any {
	t.Helper()
	m := hmac.New(sha256.New, secret)
	m.Write(r.body)
	want := "sha256=" + hex.EncodeToString(m.Sum(nil))
	if got := r.header.Get(HeaderSignature); !hmac.Equal([]byte(got), []byte(want)) {
		t.Errorf("signature %q; want %q", got, want)
	}
	var body map[string]any
	if err := json.Unmarshal(r.body, &body); err != nil {
		t.Fatalf("body %s is not JSON: %v", r.body, err)
	}
	if got := r.header.Get(HeaderEvent); got != body["event"] {
		t.Errorf("event header %q; body says %v", got, body["event"])
	}
	if got, _ := json.Marshal(body["id"]); r.header.Get(HeaderDelivery) != string(got) {
		t.Errorf("delivery header %q; body's id is %s", r.header.Get(HeaderDelivery), got)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q; want application/json", ct)
	}
	return body
}

func TestDeliveredOnce(t *testing.T) {
	f := newFixture(t)
	rc := newReceiver(t)
	d := f.deliverer(rc.srv.URL)
	f.notify(t, statedb.EventJobFailed, failed)

	runOnce(t, d)
	runOnce(t, d)
	got := rc.requests()
	if len(got) != 1 {
		t.Fatalf("receiver got %d requests; want 1", len(got))
	}
	body := verify(t, got[0])
	want := `{"event":"job-failed","id":1,"time":100000,"lorry":"upstream/gone","job_id":7,"kind":"lorry",` +
		`"status":"failed","exit":3,"minion":"m1","error":"job 7 failed with exit 3:\nfatal: \u003crepository\u003e not found\n","error_class":"gone"}`
	if string(got[0].body) != want {
		t.Errorf("body\n%s\nwant\n%s", got[0].body, want)
	}
	if body["lorry"] != "upstream/gone" {
		t.Errorf("lorry %v; want upstream/gone", body["lorry"])
	}
	dl := f.only(t)
	if dl.Status != statedb.DeliveryDelivered || dl.Attempts != 1 || dl.LastCode == nil || *dl.LastCode != 200 || dl.LastError != "" {
		t.Errorf("delivery %+v; want delivered at the first attempt with 200", dl)
	}
}

func TestRetriedAfterServerError(t *testing.T) {
	f := newFixture(t)
	rc := newReceiver(t, http.StatusInternalServerError)
	d := f.deliverer(rc.srv.URL)
	f.notify(t, statedb.EventHostListingFailed, statedb.HostListingFailed{Host: "gl.example", Error: "answered 503"})

	runOnce(t, d)
	dl := f.only(t)
	if dl.Status != statedb.DeliveryPending || dl.Attempts != 1 || dl.LastCode == nil || *dl.LastCode != 500 {
		t.Fatalf("after a 500: %+v; want pending after 1 attempt, last code 500", dl)
	}
	if !strings.Contains(dl.LastError, "500") || !strings.Contains(dl.LastError, "answer of the receiver") {
		t.Errorf("last error %q; want the status and the answer", dl.LastError)
	}
	if want := int64(100000) + 10; dl.NextTry != want {
		t.Errorf("next try %d; want %d (the first backoff)", dl.NextTry, want)
	}

	// Not yet due: nothing is sent.
	f.clock.Set(dl.NextTry - 1)
	runOnce(t, d)
	if n := len(rc.requests()); n != 1 {
		t.Fatalf("receiver got %d requests before the retry was due; want 1", n)
	}

	f.clock.Set(dl.NextTry)
	runOnce(t, d)
	got := rc.requests()
	if len(got) != 2 {
		t.Fatalf("receiver got %d requests; want 2", len(got))
	}
	verify(t, got[1])
	if string(got[0].body) != string(got[1].body) || got[0].header.Get(HeaderDelivery) != got[1].header.Get(HeaderDelivery) {
		t.Errorf("the retry differs from the first attempt:\n%s\n%s", got[0].body, got[1].body)
	}
	if dl := f.only(t); dl.Status != statedb.DeliveryDelivered || dl.Attempts != 2 || dl.LastError != "" {
		t.Errorf("after the retry: %+v; want delivered after 2 attempts", dl)
	}
}

func TestGivenUpAfterADay(t *testing.T) {
	f := newFixture(t)
	rc := newReceiver(t, 500, 500, 500)
	d := f.deliverer(rc.srv.URL)
	f.notify(t, statedb.EventJobFailed, failed)
	runOnce(t, d)
	f.clock.Set(100000 + int64(GiveUpAfter/time.Second) - 1)
	runOnce(t, d)
	if dl := f.only(t); dl.Status != statedb.DeliveryPending {
		t.Fatalf("before a day passed: %+v; want pending", dl)
	}
	f.clock.Set(100000 + int64(GiveUpAfter/time.Second) + int64(MaxRetry/time.Second))
	runOnce(t, d)
	if dl := f.only(t); dl.Status != statedb.DeliveryFailed || dl.Attempts != 3 {
		t.Fatalf("after a day: %+v; want failed after 3 attempts", dl)
	}
	runOnce(t, d)
	if n := len(rc.requests()); n != 3 {
		t.Errorf("receiver got %d requests; want 3 and none after giving up", n)
	}
}

func TestBackoff(t *testing.T) {
	tests := []struct {
		name     string
		attempts int64
		jitter   bool
		want     int64
	}{
		{name: "first", attempts: 1, want: 10},
		{name: "second", attempts: 2, want: 20},
		{name: "fifth", attempts: 5, want: 160},
		{name: "capped", attempts: 12, want: 3600},
		{name: "far past the cap", attempts: 1000, want: 3600},
		{name: "first with most jitter", attempts: 1, jitter: true, want: 12},
		{name: "capped with most jitter", attempts: 40, jitter: true, want: 4500},
	}
	for _, tc := range tests {
		d := &Deliverer{Jitter: func(n int64) int64 {
			if tc.jitter {
				return n - 1
			}
			return 0
		}}
		if got := d.backoff(tc.attempts); got != tc.want {
			t.Errorf("%s: backoff(%d) = %d; want %d", tc.name, tc.attempts, got, tc.want)
		}
	}
	// The real jitter stays in its range.
	d := &Deliverer{}
	for range 100 {
		if got := d.backoff(3); got < 40 || got > 50 {
			t.Fatalf("backoff(3) = %d; want 40 to 50", got)
		}
	}
}

// TestNothingLostAcrossRestart enqueues, closes the database before any
// delivery, and delivers after opening it again.
func TestNothingLostAcrossRestart(t *testing.T) {
	f := newFixture(t)
	f.notify(t, statedb.EventJobFailed, failed)
	if err := f.db.Close(); err != nil {
		t.Fatal(err)
	}
	f.open(t)
	rc := newReceiver(t)
	runOnce(t, f.deliverer(rc.srv.URL))
	got := rc.requests()
	if len(got) != 1 {
		t.Fatalf("receiver got %d requests after the restart; want 1", len(got))
	}
	if body := verify(t, got[0]); body["job_id"] != float64(7) {
		t.Errorf("body %s; want job 7's", got[0].body)
	}
}

// TestHangingReceiver checks that a receiver that does not answer holds
// no database session: writes go on meanwhile, and the POST ends at its
// timeout as a failure to retry.
func TestHangingReceiver(t *testing.T) {
	f := newFixture(t)
	arrived := make(chan struct{})
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	d := f.deliverer(srv.URL)
	f.notify(t, statedb.EventJobFailed, failed)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d.Timeout = time.Hour // only the test ends the POST
	done := make(chan error, 1)
	go func() { done <- d.runOnce(ctx) }()
	<-arrived
	// The POST is under way: a job is handed out and ends, as give-me-job
	// and job-update do it, and its failure joins the outbox.
	err := f.db.Update(ctx, func(tx *statedb.Tx) error {
		_, err := tx.SetConfigLorries(ctx, []statedb.NewLorry{{Path: "a", Text: `{"a":{"type":"git"}}`, Kind: "lorry",
			Interval: 60}}, statedb.Kept{})
		if err != nil {
			return err
		}
		a, err := tx.GiveMeJob(ctx, statedb.MinionID{Name: "m1", Host: "h", PID: 1})
		if err != nil {
			return err
		}
		_, err = tx.UpdateJob(ctx, statedb.JobUpdate{ID: a.Job.ID, Exit: exit(1)})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(f.deliveries(t)); n != 2 {
		t.Fatalf("outbox holds %d deliveries; want 2", n)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("runOnce = %v; want it to stop with its context", err)
	}
	// Stopping is no attempt: the delivery waits for the next start.
	if dl := f.deliveries(t)[1]; dl.Status != statedb.DeliveryPending || dl.Attempts != 0 {
		t.Errorf("delivery after stopping: %+v; want pending, no attempt counted", dl)
	}
}

func TestTimeoutIsAFailedAttempt(t *testing.T) {
	f := newFixture(t)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	d := f.deliverer(srv.URL)
	d.Timeout = time.Millisecond
	f.notify(t, statedb.EventJobFailed, failed)
	runOnce(t, d)
	dl := f.only(t)
	if dl.Status != statedb.DeliveryPending || dl.Attempts != 1 || dl.LastCode != nil ||
		!strings.Contains(dl.LastError, "deadline exceeded") {
		t.Errorf("delivery %+v; want pending after 1 attempt that timed out", dl)
	}
}

func TestRedirectIsAFailure(t *testing.T) {
	f := newFixture(t)
	rc := newReceiver(t)
	srv := httptest.NewServer(http.RedirectHandler(rc.srv.URL, http.StatusFound))
	defer srv.Close()
	f.notify(t, statedb.EventJobFailed, failed)
	runOnce(t, f.deliverer(srv.URL))
	if dl := f.only(t); dl.Status != statedb.DeliveryPending || dl.LastCode == nil || *dl.LastCode != 302 {
		t.Errorf("delivery %+v; want pending after a 302", dl)
	}
	if n := len(rc.requests()); n != 0 {
		t.Errorf("the redirect was followed: the receiver got %d requests", n)
	}
}

func TestOldDeliveriesRemoved(t *testing.T) {
	f := newFixture(t)
	rc := newReceiver(t)
	d := f.deliverer(rc.srv.URL)
	f.notify(t, statedb.EventJobFailed, failed)
	runOnce(t, d)
	f.clock.Set(100000 + int64(KeepDone/time.Second) - 1)
	f.notify(t, statedb.EventJobFailed, failed) // pending until the next run: kept
	runOnce(t, d)
	if n := len(f.deliveries(t)); n != 2 {
		t.Fatalf("outbox holds %d deliveries before a week passed; want 2", n)
	}
	f.clock.Set(100000 + int64(KeepDone/time.Second) + 1)
	runOnce(t, d)
	ds := f.deliveries(t)
	if len(ds) != 1 || ds[0].ID != 2 {
		t.Errorf("outbox holds %+v; want only delivery 2", ds)
	}
}

func TestParseEvents(t *testing.T) {
	tests := []struct {
		name, list string
		want       []string
		err        string
	}{
		{name: "all", list: "", want: statedb.Events},
		{name: "some", list: "job-failed, host-listing-failed", want: []string{"job-failed", "host-listing-failed"}},
		{name: "unknown", list: "job-failed,jobs-failed,nope", err: `unknown events "jobs-failed", "nope"`},
	}
	for _, tc := range tests {
		got, err := ParseEvents(tc.list)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: ParseEvents(%q) = %v, %v; want an error with %q", tc.name, tc.list, got, err, tc.err)
			}
			continue
		}
		if err != nil || len(got) != len(tc.want) {
			t.Errorf("%s: ParseEvents(%q) = %v, %v; want %v", tc.name, tc.list, got, err, tc.want)
			continue
		}
		for _, e := range tc.want {
			if !got[e] {
				t.Errorf("%s: ParseEvents(%q) lacks %s", tc.name, tc.list, e)
			}
		}
	}
}

// TestTwoDeliverersNeverSendOneNotificationAtOnce runs the deliverers of
// two WEBAPPs sharing the database: while one is POSTing a notification,
// the other finds nothing to send, and the receiver gets it once.
func TestTwoDeliverersNeverSendOneNotificationAtOnce(t *testing.T) {
	f := newFixture(t)
	f.notify(t, statedb.EventJobFailed, statedb.JobFailed{Lorry: "a/b", JobID: 1})
	posting, release := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	posts := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		posts++
		first := posts == 1
		mu.Unlock()
		if first {
			close(posting)
			<-release
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	one := f.deliverer(srv.URL)
	second := *f // the other WEBAPP's handle on the same file
	second.open(t)
	two := second.deliverer(srv.URL)

	done := make(chan error, 1)
	go func() { done <- one.runOnce(context.Background()) }()
	select {
	case <-posting:
	case err := <-done:
		t.Fatalf("the first deliverer ended (%v) without POSTing", err)
	}
	if err := two.runOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := two.runOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if posts != 1 {
		t.Errorf("the receiver got %d POSTs; want 1", posts)
	}
	if d := f.only(t); d.Status != statedb.DeliveryDelivered || d.Attempts != 1 {
		t.Errorf("delivery %s after %d attempts; want delivered after 1", d.Status, d.Attempts)
	}
}
