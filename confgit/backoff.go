package confgit

import (
	"errors"
	"time"
)

// Defaults of the backoff keys of lorries, scrapers and host sections.
const (
	DefaultMaxBackoff    = 24 * time.Hour
	DefaultHardFailAfter = 14
)

// backoffKeys are a section's "max-backoff" and "hard-fail-after": how
// long at most a failing entry waits before its next run, and after how
// many failures in a row it is no longer run by itself.
type backoffKeys struct {
	maxBackoff    time.Duration
	hardFailAfter int64
}

// parseBackoffKeys reads the backoff keys of sec; on error it also names
// the key at fault.
func parseBackoffKeys(sec map[string]any) (backoffKeys, string, error) {
	b := backoffKeys{hardFailAfter: DefaultHardFailAfter}
	var err error
	if b.maxBackoff, err = intervalKey(sec, "max-backoff", DefaultMaxBackoff); err != nil {
		return b, "max-backoff", err
	}
	if b.maxBackoff <= 0 {
		return b, "max-backoff", errors.New("must be more than 0")
	}
	if v, ok := sec["hard-fail-after"]; ok {
		n, err := threadsValue(v)
		if err == nil && (n == nil || *n < 1) {
			err = errors.New("must be a whole number from 1")
		}
		if err != nil {
			return b, "hard-fail-after", err
		}
		b.hardFailAfter = *n
	}
	return b, "", nil
}
