package routes

import (
	"context"
	"net/http"
)

// bodies is the server's budget of memory for request bodies.
func (s *Server) bodies() *budget {
	s.bodiesOnce.Do(func() { s.bodyBudget = newBudget(bodyBudget) })
	return s.bodyBudget
}

// budget is a weighted semaphore, in units of budgetUnit bytes, served in
// turn: a large request waits for its share without being overtaken.
type budget struct {
	turn   chan struct{}
	tokens chan struct{}
}

const budgetUnit = 4 << 10

func newBudget(bytes int64) *budget {
	b := &budget{turn: make(chan struct{}, 1), tokens: make(chan struct{}, bytes/budgetUnit)}
	for range cap(b.tokens) {
		b.tokens <- struct{}{}
	}
	return b
}

// acquire takes bytes of the budget, waiting up to bodyWait, and returns
// the function that gives them back.
func (b *budget) acquire(ctx context.Context, bytes int64) (func(), error) {
	n := int(min(max(bytes/budgetUnit, 1), int64(cap(b.tokens))))
	ctx, cancel := context.WithTimeout(ctx, bodyWait)
	defer cancel()
	busy := errorf(http.StatusServiceUnavailable, "too many request bodies are being read; try again")
	select {
	case b.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, busy
	}
	defer func() { <-b.turn }()
	for i := range n {
		select {
		case <-b.tokens:
		case <-ctx.Done():
			b.release(i)
			return nil, busy
		}
	}
	return func() { b.release(n) }, nil
}

func (b *budget) release(n int) {
	for range n {
		b.tokens <- struct{}{}
	}
}
