package mirror

import (
	"errors"
	"strings"
)

// The error classes of a failed run, besides ClassLFS: the kinds of
// failure an operator tells apart, and the WEBAPP treats apart (auth and
// gone hard-fail sooner, as retrying seldom mends them).
const (
	// ClassAuth: the upstream refused the credentials, or asked for some.
	ClassAuth = "auth"
	// ClassGone: the upstream repository is not there.
	ClassGone = "gone"
	// ClassNetwork: the upstream could not be reached: DNS, connection,
	// timeout, TLS.
	ClassNetwork = "network"
	// ClassEmpty: nothing upstream matched the spec.
	ClassEmpty = "empty"
	// ClassDownstream: the push was refused, or the downstream could not
	// be reached.
	ClassDownstream = "downstream"
	// ClassConverter: an svn, hg, bzr or cvs conversion failed.
	ClassConverter = "converter"
	// ClassInternal: anything else, such as a broken spec or working area.
	ClassInternal = "internal"
)

// classPatterns say the class of a failure from the words of git, curl,
// ssh, the converters and Go's HTTP client, first match first; patterns
// are matched in lower case. noClass stops the matching: the run's kind
// decides.
var classPatterns = []struct{ pattern, class string }{
	{"is not installed", noClass},
	{"executable file not found", noClass},
	{"couldn't find remote ref", ClassEmpty},
	{"no ref upstream matches", ClassEmpty},
	{"nothing upstream matched", ClassEmpty},
	{"authentication failed", ClassAuth},
	{"could not read username", ClassAuth},
	{"could not read password", ClassAuth},
	{"permission denied (publickey", ClassAuth},
	{"host key verification failed", ClassAuth},
	{"http 401", ClassAuth},
	{"http 403", ClassAuth},
	{"returned error: 401", ClassAuth},
	{"returned error: 403", ClassAuth},
	{"401 unauthorized", ClassAuth},
	{"403 forbidden", ClassAuth},
	{"authorization failed", ClassAuth},
	{"repository not found", ClassGone},
	{"does not appear to be a git repository", ClassGone},
	{"does not exist", ClassGone},
	{"http 404", ClassGone},
	{"returned error: 404", ClassGone},
	{"404 not found", ClassGone},
	{"410 gone", ClassGone},
	{"not found", ClassGone},
	{"could not resolve host", ClassNetwork},
	{"could not resolve hostname", ClassNetwork},
	{"no such host", ClassNetwork},
	{"name or service not known", ClassNetwork},
	{"temporary failure in name resolution", ClassNetwork},
	{"connection refused", ClassNetwork},
	{"connection reset", ClassNetwork},
	{"failed to connect", ClassNetwork},
	{"network is unreachable", ClassNetwork},
	{"no route to host", ClassNetwork},
	{"timed out", ClassNetwork},
	{"i/o timeout", ClassNetwork},
	{"the remote end hung up unexpectedly", ClassNetwork},
	{"early eof", ClassNetwork},
	{"ssl", ClassNetwork},
	{"tls", ClassNetwork},
	{"certificate", ClassNetwork},
	{"[rejected]", ClassDownstream},
	{"rejected", ClassDownstream},
	{"remote: error", ClassDownstream},
	{"failed to push", ClassDownstream},
	{"permission denied", ClassAuth},
}

const noClass = "-"

// converterTypes are the spec types converted by an external tool.
var converterTypes = map[string]bool{"svn": true, "hg": true, "bzr": true, "cvs": true}

// outputError is a program's failure with the last of its output, which
// says more about its kind than the one line its message keeps.
type outputError struct {
	err  error
	tail string
}

func (e *outputError) Error() string { return e.err.Error() }
func (e *outputError) Unwrap() error { return e.err }

// classify names the class of a run of a spec of specType that failed
// with err: the class the failure was given where it happened, else the
// first pattern that its message or the failed program's output matches,
// else converter for a conversion and internal for anything else.
func classify(err error, specType string) string {
	if err == nil {
		return ""
	}
	if c := errorClass(err); c != "" {
		return c
	}
	text := err.Error()
	var out *outputError
	if errors.As(err, &out) {
		text += "\n" + out.tail
	}
	if c := matchClass(text); c != "" && c != noClass {
		return c
	}
	if converterTypes[specType] {
		return ClassConverter
	}
	return ClassInternal
}

// matchClass is the class of the first pattern text matches, "" for none.
func matchClass(text string) string {
	text = strings.ToLower(text)
	for _, p := range classPatterns {
		if strings.Contains(text, p.pattern) {
			return p.class
		}
	}
	return ""
}
