package rules

import "lorrycontroller.dev/lc/wire"

// Job states, after Disbatch's task states. A job is live while claimed or
// running; docs/api.md lists them with Disbatch's and Bistro's names.
const (
	// StatusClaimed is a job handed out whose minion has not yet said
	// that its process started.
	StatusClaimed   = "claimed"
	StatusRunning   = "running"
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
	StatusKilled    = "killed"
	StatusTimedOut  = "timed-out"
	StatusLost      = "lost"
	// StatusOrphaned is a claimed job never confirmed within the claim
	// timeout: it never ran, so it does not count as a run.
	StatusOrphaned = "orphaned"
)

// Live says whether a job of status is claimed or running: not over yet.
func Live(status string) bool { return status == StatusClaimed || status == StatusRunning }

// CountsAsFailure says whether a job that ended with status is a failure
// of its lorry: not an operator's kill, nor a job that never ran.
func CountsAsFailure(status string) bool {
	return status == StatusFailed || status == StatusTimedOut || status == StatusLost
}

// The error classes that the WEBAPP itself gives or treats apart; lorry
// names the others (see the mirror package).
const (
	ClassAuth       = "auth"
	ClassGone       = "gone"
	ClassDownstream = "downstream"
	ClassInternal   = "internal"
)

// EndClass is the error class kept for a job of kind that ended with
// status, whose minion reported the class reported: a failure's only. A
// lorry that failed without naming the kind of its failure failed in a
// way it did not foresee, which is internal; a scraper names its own or
// none.
func EndClass(kind, status, reported string) string {
	if status != StatusFailed {
		return ""
	}
	if reported == "" && kind == wire.KindLorry {
		return ClassInternal
	}
	return reported
}
