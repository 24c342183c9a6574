// Package webhook delivers the WEBAPP's notifications: it POSTs the events
// waiting in the state database's outbox to the configured URL, signed
// with a shared secret, and retries with backoff until the receiver takes
// them or a day has passed.
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"lorrycontroller.dev/lc/redact"
	"lorrycontroller.dev/lc/statedb"
	"lorrycontroller.dev/lc/templates"
)

// The headers of every delivery.
const (
	HeaderEvent     = "X-Lorry-Controller-Event"
	HeaderDelivery  = "X-Lorry-Controller-Delivery"
	HeaderSignature = "X-Lorry-Controller-Signature"
)

const (
	// DefaultTimeout bounds one POST, answer included.
	DefaultTimeout = 10 * time.Second
	// DefaultPoll is how often Run looks for deliveries that are due.
	DefaultPoll = 2 * time.Second
	// FirstRetry is the wait after the first failed attempt; each failure
	// doubles it up to MaxRetry.
	FirstRetry = 10 * time.Second
	MaxRetry   = time.Hour
	// GiveUpAfter is how long after its event a delivery is tried.
	GiveUpAfter = 24 * time.Hour
	// KeepDone is how long delivered and given-up deliveries are kept
	// for the notifications page.
	KeepDone = 7 * 24 * time.Hour

	// batch is how many due deliveries one runOnce sends at most, so that
	// a backlog never keeps Run from noticing that it should stop.
	batch = 20
	// maxAnswer is how much of an answer is read: a receiver's body is
	// only shown, in part, on the notifications page.
	maxAnswer = 64 << 10
	// answerShown is how much of a failed answer's body is recorded.
	answerShown = 200
)

// Deliverer sends the outbox's notifications. Run it in the background;
// tests call runOnce.
type Deliverer struct {
	DB     *statedb.DB
	URL    string
	Secret []byte
	Log    *slog.Logger
	// Client makes the POSTs; nil is one that follows no redirects.
	Client *http.Client
	// Timeout bounds each POST; 0 is DefaultTimeout.
	Timeout time.Duration
	// Poll is how often Run looks for due deliveries; 0 is DefaultPoll.
	Poll time.Duration
	// Jitter returns a number in [0, n) to spread retries by; nil is
	// random.
	Jitter func(n int64) int64
	// PublicURL is where the WEBAPP's pages are reached (--public-url);
	// when set, each notification links to the pages of what it is about.
	PublicURL string
	// Owner names this deliverer in the claims it makes on the outbox, so
	// that deliverers of several WEBAPPs sharing the database never send
	// one notification at once; "" is a name made up at the first run.
	Owner string
}

// Run delivers whatever is due every d.Poll until ctx ends.
func (d *Deliverer) Run(ctx context.Context) {
	poll := d.Poll
	if poll <= 0 {
		poll = DefaultPoll
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		if err := d.runOnce(ctx); err != nil && ctx.Err() == nil {
			d.Log.Error("deliver notifications", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// runOnce claims the deliveries that are due, sends them, records each
// answer, and forgets deliveries done long ago. The claim lasts as long
// as the POSTs of the whole batch may take, and a little more. No
// database session is held while a POST is under way: the minions'
// routes never wait for a receiver.
func (d *Deliverer) runOnce(ctx context.Context) error {
	if d.Owner == "" {
		d.Owner = newOwner()
	}
	var due []statedb.Delivery
	err := d.DB.Update(ctx, func(tx *statedb.Tx) error {
		var err error
		due, err = tx.ClaimDeliveries(ctx, d.Owner, (batch+1)*d.timeout(), batch)
		return err
	})
	if err != nil {
		return err
	}
	for _, dl := range due {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		code, perr := d.post(ctx, dl)
		if ctx.Err() != nil {
			// Stopping is no failure of the receiver's: the delivery is
			// tried again after the restart.
			return ctx.Err()
		}
		if err := d.record(ctx, dl, code, perr); err != nil {
			return err
		}
	}
	return d.DB.Update(ctx, func(tx *statedb.Tx) error {
		_, err := tx.RemoveOldDeliveries(ctx, int64(KeepDone/time.Second))
		return err
	})
}

// record notes the outcome of a POST of dl: delivered, to be tried again
// after a backoff, or given up once GiveUpAfter has passed since the
// event.
func (d *Deliverer) record(ctx context.Context, dl statedb.Delivery, code int, perr error) error {
	a := statedb.DeliveryAttempt{Code: code, Owner: d.Owner}
	err := d.DB.Update(ctx, func(tx *statedb.Tx) error {
		switch {
		case perr == nil:
			a.Status = statedb.DeliveryDelivered
		case tx.Now-dl.Created >= int64(GiveUpAfter/time.Second):
			a.Status, a.Error = statedb.DeliveryFailed, perr.Error()
		default:
			a.Status, a.Error = statedb.DeliveryPending, perr.Error()
			a.NextTry = tx.Now + d.backoff(dl.Attempts+1)
		}
		return tx.RecordDelivery(ctx, dl.ID, a)
	})
	if errors.Is(err, statedb.ErrTaken) {
		// The claim ran out during the POST and another deliverer took
		// the delivery: its attempt is the one recorded.
		d.Log.Warn("notification claimed by another deliverer meanwhile", "delivery_id", dl.ID, "err", err)
		return nil
	}
	if err != nil {
		return err
	}
	log := d.Log.With("delivery_id", dl.ID, "event", dl.Event, "attempts", dl.Attempts+1)
	switch a.Status {
	case statedb.DeliveryDelivered:
		log.Info("notification delivered", "status", code)
	case statedb.DeliveryFailed:
		log.Error("notification given up", "err", a.Error)
	default:
		log.Warn("notification not delivered; will retry", "err", a.Error, "next_try", a.NextTry)
	}
	return nil
}

// backoff is the wait in seconds after the attempts-th failed attempt:
// FirstRetry doubled per earlier failure up to MaxRetry, plus up to a
// quarter more at random so that deliveries that failed together do not
// all come back together.
func (d *Deliverer) backoff(attempts int64) int64 {
	wait := int64(FirstRetry / time.Second)
	limit := int64(MaxRetry / time.Second)
	for i := int64(1); i < attempts && wait < limit; i++ {
		wait *= 2
	}
	wait = min(wait, limit)
	jitter := d.Jitter
	if jitter == nil {
		jitter = rand.Int64N
	}
	return wait + jitter(wait/4+1)
}

// post sends dl once. It returns the receiver's status code (0 if there
// was none) and why the delivery failed, nil if it succeeded.
func (d *Deliverer) post(ctx context.Context, dl statedb.Delivery) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, d.timeout())
	defer cancel()
	body := Body(dl, d.PublicURL)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.URL, bytes.NewReader(body))
	if err != nil {
		return 0, d.hide(fmt.Errorf("make request: %w", err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "lorry-controller")
	req.Header.Set(HeaderEvent, dl.Event)
	req.Header.Set(HeaderDelivery, strconv.FormatInt(dl.ID, 10))
	req.Header.Set(HeaderSignature, Sign(d.Secret, body))
	resp, err := d.client().Do(req)
	if err != nil {
		return 0, d.hide(err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, d.hide(fmt.Errorf("answered %s%s", resp.Status, shown(answer)))
	}
	if err != nil {
		// The receiver said yes; a body cut short changes nothing.
		d.Log.Debug("read notification answer", "delivery_id", dl.ID, "err", err)
	}
	return resp.StatusCode, nil
}

// hide takes out of err all of the URL but its scheme, host and port:
// its path and query are often the receiver's secret (a Slack-style
// webhook's are), and the error is shown on the notifications page and
// route, to anyone who may read, and in the log. The client's *url.Error
// names the URL as it sent it; a receiver's answer may echo it.
func (d *Deliverer) hide(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = redact.Origin(d.URL)
	}
	return errors.New(redact.URL(err.Error(), d.URL))
}

// timeout bounds each POST.
func (d *Deliverer) timeout() time.Duration {
	if d.Timeout <= 0 {
		return DefaultTimeout
	}
	return d.Timeout
}

// newOwner is a name for a deliverer that is no other's: its host, its
// process and a random part.
func newOwner() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d/%x", host, os.Getpid(), rand.Uint64())
}

func (d *Deliverer) client() *http.Client {
	if d.Client != nil {
		return d.Client
	}
	return defaultClient
}

// defaultClient follows no redirect: a receiver that moved is a failure
// to see on the page, not a reason to send signed events elsewhere.
var defaultClient = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// shown is the start of a failed answer's body, for the page and the log.
func shown(answer []byte) string {
	s := strings.TrimSpace(strings.ToValidUTF8(string(answer), "?"))
	if s == "" {
		return ""
	}
	if len(s) > answerShown {
		s = s[:answerShown]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += "…"
	}
	return ": " + s
}

// Body is what a delivery POSTs: the event, the delivery's id and the
// event's time, the links to the WEBAPP's pages of what it is about when
// publicURL is set, then the fields of the event's payload. It is the
// same at every attempt, so a receiver may de-duplicate by id.
func Body(dl statedb.Delivery, publicURL string) []byte {
	head, _ := json.Marshal(struct {
		Event string            `json:"event"`
		ID    int64             `json:"id"`
		Time  int64             `json:"time"`
		Links map[string]string `json:"links,omitempty"`
	}{dl.Event, dl.ID, dl.Created, links(dl.Payload, publicURL)})
	p := strings.TrimSpace(dl.Payload)
	if len(p) <= 2 {
		return head
	}
	return append(append(head[:len(head)-1], ','), p[1:]...)
}

// links are the pages under publicURL of the lorry, job and host that
// payload names, by the same names; nil without publicURL.
func links(payload, publicURL string) map[string]string {
	if publicURL == "" {
		return nil
	}
	var about struct {
		Lorry string `json:"lorry"`
		JobID int64  `json:"job_id"`
		Host  string `json:"host"`
	}
	json.Unmarshal([]byte(payload), &about)
	l := map[string]string{"notifications": publicURL + "/1.0/notifications-html"}
	if about.Lorry != "" {
		l["lorry"] = publicURL + string(templates.LorryURL(about.Lorry))
	}
	if about.JobID != 0 {
		l["job"] = publicURL + templates.JobURL(about.JobID)
	}
	if about.Host != "" {
		l["host"] = publicURL + "/1.0/hosts-html"
	}
	return l
}

// Sign is the signature header of body: HMAC-SHA256 with secret, in hex.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// ParseEvents reads the comma-separated list of events to notify of; ""
// is every event. Unknown names are refused, all of them named.
func ParseEvents(list string) (map[string]bool, error) {
	events := map[string]bool{}
	if strings.TrimSpace(list) == "" {
		for _, e := range statedb.Events {
			events[e] = true
		}
		return events, nil
	}
	var unknown []string
	for _, e := range strings.Split(list, ",") {
		e = strings.TrimSpace(e)
		switch {
		case e == "":
		case slices.Contains(statedb.Events, e):
			events[e] = true
		default:
			unknown = append(unknown, strconv.Quote(e))
		}
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("unknown events %s; the events are %s", strings.Join(unknown, ", "), strings.Join(statedb.Events, ", "))
	}
	return events, nil
}
