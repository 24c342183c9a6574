package wire

import "strconv"

// ResultFile is what lorry writes to --result-file or --result-fd after a
// run: an entry per spec that was run, by spec name. It is an object so
// that fields can be added without breaking its readers. The minion
// passes what it says of the job's spec on in the final job-update.
type ResultFile struct {
	Lorries map[string]SpecResult `json:"lorries"`
}

// SpecResult is what a run did to one spec.
type SpecResult struct {
	OK bool `json:"ok"`
	// Head is the default branch of the mirror, without refs/heads/,
	// when the run succeeded and the mirror has one.
	Head string `json:"head,omitempty"`
	// Refs are the refs the run changed downstream (in the mirror with
	// --pull-only), when the run succeeded and that is known; lorry cuts
	// each list at MaxRefsPerKind.
	Refs *RefChanges `json:"refs,omitempty"`
	// ErrorClass names the kind of a failure that an operator tells
	// apart, such as "lfs" for an LFS object that could not be mirrored.
	ErrorClass string `json:"error_class,omitempty"`
}

// Output limits.
const (
	// DefaultOutputLimit is how many bytes of a job's output the WEBAPP
	// keeps unless told otherwise, and what a minion assumes of a WEBAPP
	// that does not say.
	DefaultOutputLimit = 8 << 20
	// MaxCutMark is the longest CutMark.
	MaxCutMark = 64
)

// CutMark is what the WEBAPP shows in a job's output where n bytes of its
// middle were cut.
func CutMark(n int64) string {
	return "\n[... " + strconv.FormatInt(n, 10) + " bytes of output cut ...]\n"
}
