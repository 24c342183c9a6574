package dbtest

import (
	"context"
	"testing"
)

// Run is Main for a TestMain that has more to clean up after the tests:
// it runs them, stops the private cluster, if they started one, and
// returns the exit code instead of exiting.
func Run(m *testing.M, prep ...func(ctx context.Context, url string) error) int {
	if len(prep) > 0 {
		prepare = prep[0]
	}
	code := m.Run()
	stopServer()
	return code
}
