// Package clock provides the time source that the WEBAPP injects into the
// state database, so tests and the pretend-time route can control "now".
package clock

import (
	"sync/atomic"
	"time"
)

// Clock tells the time.
type Clock interface {
	Now() time.Time
}

// System is the real wall clock.
type System struct{}

// Now returns the current time.
func (System) Now() time.Time { return time.Now() }

// Fake is a clock that moves only when Set is called. Its zero value stands
// at Unix time 0, which is where the WEBAPP's debug clock starts.
type Fake struct {
	unix atomic.Int64
}

// Now returns the time last set.
func (f *Fake) Now() time.Time { return time.Unix(f.unix.Load(), 0) }

// Set moves the clock to t, given in Unix seconds.
func (f *Fake) Set(t int64) { f.unix.Store(t) }

// Offset is the system's clock set ahead by its value (behind, if
// negative): a machine whose clock is wrong, for the tests of clock skew,
// which the system's clock of the tests' own machine cannot be made to be
// (Go reads it without the C library, so libfaketime does not reach it).
type Offset time.Duration

// Now returns the system's time moved by o.
func (o Offset) Now() time.Time { return time.Now().Add(time.Duration(o)) }
