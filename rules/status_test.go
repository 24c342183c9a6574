package rules

import (
	"testing"

	"lorrycontroller.dev/lc/wire"
)

var allStatuses = []string{StatusClaimed, StatusRunning, StatusSucceeded, StatusFailed, StatusKilled,
	StatusTimedOut, StatusLost, StatusOrphaned}

func TestEndClass(t *testing.T) {
	for _, kind := range []string{wire.KindLorry, wire.KindScraper} {
		for _, status := range allStatuses {
			for _, reported := range []string{"", ClassAuth, ClassGone, "network"} {
				got := EndClass(kind, status, reported)
				want := ""
				switch {
				case status != StatusFailed:
				case reported != "":
					want = reported
				case kind == wire.KindLorry:
					want = ClassInternal
				}
				if got != want {
					t.Errorf("EndClass(%s, %s, %q) = %q; want %q", kind, status, reported, got, want)
				}
			}
		}
	}
}

func TestCountsAsFailure(t *testing.T) {
	for _, status := range allStatuses {
		want := status == StatusFailed || status == StatusTimedOut || status == StatusLost
		if got := CountsAsFailure(status); got != want {
			t.Errorf("CountsAsFailure(%s) = %v; want %v", status, got, want)
		}
		if got, want := Live(status), status == StatusClaimed || status == StatusRunning; got != want {
			t.Errorf("Live(%s) = %v; want %v", status, got, want)
		}
	}
}
