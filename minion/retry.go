package minion

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"time"
)

// webapps are the WEBAPPs a minion may ask, all of them serving one state
// database, so that any of them can hand out its jobs and take their
// reports. The minion asks one at a time: the one that answered last.
type webapps struct {
	urls []string
	// cur is the index in urls of the WEBAPP in use. The job's updates
	// and the download of a scraper's runtime may go out at once, so
	// it is shared.
	cur atomic.Int32
}

func newWebapps(urls []string) *webapps {
	w := &webapps{}
	for _, u := range urls {
		w.urls = append(w.urls, strings.TrimRight(u, "/"))
	}
	return w
}

// failoverPause is the pause before asking the next WEBAPP after one did
// not answer: short, as the job's lease runs meanwhile, and spread at
// random, so that the minions that met one WEBAPP's end together do not
// all arrive at the next at once.
func (m *Minion) failoverPause() time.Duration {
	d := m.cfg.BackoffMin / 4
	if d <= 0 {
		return 0
	}
	return d/2 + rand.N(d)
}

// ask calls do with the base URL of the WEBAPP in use and, while do fails
// in a way that another WEBAPP may not (no answer, a timeout, a 5xx, say
// from a proxy whose WEBAPP is gone), with each of the others in turn, in
// the order they were given, after a short pause. The first that answers
// stays in use, for this and the next requests. Every WEBAPP is asked at
// most once: the caller's own retries, with their backoff, go round again.
// It returns the error of the last WEBAPP asked when none answered.
//
// When ctx has a deadline, as the updates of a job do at the end of its
// lease, and split is set, each WEBAPP gets an equal part of the time
// left, so that one that hangs does not use up the lease before the
// others are asked. A download that goes on after do returns, whose
// context must outlive it, is not split.
func (m *Minion) ask(ctx context.Context, route string, split bool, do func(ctx context.Context, base string) error) error {
	w := m.webapps
	n := len(w.urls)
	if n == 0 {
		return fmt.Errorf("%s: no WEBAPP URL", route)
	}
	for i := 0; ; i++ {
		k := int(w.cur.Load())
		base := w.urls[k]
		actx, cancel := ctx, context.CancelFunc(func() {})
		if end, ok := ctx.Deadline(); ok && split && n-i > 1 {
			actx, cancel = context.WithDeadline(ctx, time.Now().Add(time.Until(end)/time.Duration(n-i)))
		}
		err := do(actx, base)
		cancel()
		if err == nil || !retryable(err) {
			if i > 0 {
				m.log.Info("webapp answers; using it", "route", route, "webapp_url", base)
			}
			return err
		}
		if n == 1 || ctx.Err() != nil {
			return err
		}
		next := (k + 1) % n
		// Another request may have moved on already; it moved from the
		// same WEBAPP, or found one that answers.
		w.cur.CompareAndSwap(int32(k), int32(next))
		if i == n-1 {
			return err
		}
		m.log.Warn("webapp does not answer; asking the next", "route", route, "webapp_url", base, "next", w.urls[next], "err", err)
		if !sleep(ctx, m.failoverPause()) {
			return err
		}
	}
}

// backoff doubles the delay between retries up to a cap, and spreads each
// delay at random over half to one and a half of it: after a WEBAPP
// restart, minions that failed together would otherwise retry together.
type backoff struct {
	min, max, cur time.Duration
}

func (m *Minion) newBackoff() *backoff {
	return &backoff{min: m.cfg.BackoffMin, max: m.cfg.BackoffMax}
}

func (b *backoff) next() time.Duration {
	if b.cur == 0 {
		b.cur = b.min
	}
	d := b.cur
	b.cur = min(2*b.cur, b.max)
	return d/2 + rand.N(d)
}

func (b *backoff) reset() { b.cur = 0 }

// sleep waits for d or until ctx is done, and says whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
