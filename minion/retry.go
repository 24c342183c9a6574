package minion

import (
	"context"
	"math/rand/v2"
	"time"
)

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
