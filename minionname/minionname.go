// Package minionname is the rule for the name of a minion, which both
// sides of the job protocol and the token tool apply. A name is shown on
// pages and in logs, sent in forms, and names files in a minion's working
// area, so it is a plain word: ASCII letters, digits, '.', '_' and '-',
// 1 to 64 of them, and neither "." nor "..". Host names fit, and so does
// HOST-N for systemd instance N.
package minionname

import (
	"fmt"
	"strconv"
)

// MaxLen is the longest a minion name may be.
const MaxLen = 64

// Check says why name cannot name a minion, or nil if it can.
func Check(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("minion name is empty")
	case len(name) > MaxLen:
		return fmt.Errorf("minion name %s… is longer than %d characters", strconv.Quote(name[:MaxLen]), MaxLen)
	case name == "." || name == "..":
		return fmt.Errorf("minion name %q is not allowed", name)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !allowed(c) {
			return fmt.Errorf("minion name %s has %s: allowed are letters, digits, '.', '_' and '-'",
				strconv.Quote(name), strconv.QuoteRune(rune(c)))
		}
	}
	return nil
}

func allowed(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '.' || c == '_' || c == '-'
}
