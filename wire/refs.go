package wire

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Limits of ref changes.
const (
	// MaxRefsPerKind bounds each list of RefChanges: a first mirror of a
	// large repository creates more refs than anyone reads on a job's
	// page. lorry cuts a longer list and says so with Truncated.
	MaxRefsPerKind = 1000
	// MaxRefsBytes bounds the refs of a job-update, as JSON. MaxRefsPerKind
	// refs of each kind take far less unless their names are very long;
	// a minion drops refs that would take more rather than send them.
	MaxRefsBytes = 2 << 20
)

// RefChanges are the refs a successful run created, updated and deleted
// where an operator looks: in the downstream, or in the mirror of a
// pull-only run. Each list is sorted by ref. The same JSON is in lorry's
// result file, in job-update's refs, in the job's answer and in the
// refs-changed notification, and is what the state database keeps.
type RefChanges struct {
	Created []RefChange `json:"created"`
	Updated []RefChange `json:"updated"`
	Deleted []RefChange `json:"deleted"`
	// Truncated says that lorry cut a list at MaxRefsPerKind.
	Truncated bool `json:"truncated"`
}

// RefChange is what a run did to one ref: Old is "" for a ref it created,
// New is "" for a ref it deleted.
type RefChange struct {
	Ref string `json:"ref"`
	Old string `json:"old,omitempty"`
	New string `json:"new,omitempty"`
}

// Any says whether any ref changed.
func (c *RefChanges) Any() bool {
	return c != nil && len(c.Created)+len(c.Updated)+len(c.Deleted) > 0
}

// Cut returns c with each list cut at MaxRefsPerKind, Truncated if one
// was, and each list non-nil, so that it is [] in JSON, never null; nil
// for nil.
func (c *RefChanges) Cut() *RefChanges {
	if c == nil {
		return nil
	}
	r := &RefChanges{Truncated: c.Truncated}
	cut := func(l []RefChange) []RefChange {
		if len(l) > MaxRefsPerKind {
			l, r.Truncated = l[:MaxRefsPerKind], true
		}
		return append(make([]RefChange, 0, len(l)), l...)
	}
	r.Created, r.Updated, r.Deleted = cut(c.Created), cut(c.Updated), cut(c.Deleted)
	return r
}

// ParseRefs decodes the refs of a job-update: nil for "", else a JSON
// object of the shape of RefChanges with no other fields, at most
// MaxRefsBytes long and MaxRefsPerKind refs of each kind, each a valid
// ref name under refs/ with the object ids its kind has.
func ParseRefs(v string) (*RefChanges, error) {
	if v == "" {
		return nil, nil
	}
	if len(v) > MaxRefsBytes {
		return nil, fmt.Errorf("%d bytes, more than %d", len(v), MaxRefsBytes)
	}
	var c RefChanges
	dec := json.NewDecoder(strings.NewReader(v))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("more than one JSON value")
	}
	for _, kind := range []struct {
		name     string
		refs     []RefChange
		old, new bool
	}{
		{"created", c.Created, false, true},
		{"updated", c.Updated, true, true},
		{"deleted", c.Deleted, true, false},
	} {
		if len(kind.refs) > MaxRefsPerKind {
			return nil, fmt.Errorf("%d %s refs, more than %d", len(kind.refs), kind.name, MaxRefsPerKind)
		}
		for _, r := range kind.refs {
			if why := BadRef(r.Ref); why != "" {
				return nil, fmt.Errorf("%s ref %q: %s", kind.name, r.Ref, why)
			}
			for _, id := range []struct {
				what  string
				value string
				want  bool
			}{{"old", r.Old, kind.old}, {"new", r.New, kind.new}} {
				if why := badObjectID(id.value, id.want); why != "" {
					return nil, fmt.Errorf("%s ref %q: %s %s", kind.name, r.Ref, id.what, why)
				}
			}
		}
	}
	return c.Cut(), nil
}

// BadRef says why git would refuse name as a full ref name under refs/,
// or "" if it would not.
func BadRef(name string) string {
	rest, ok := strings.CutPrefix(name, "refs/")
	if !ok {
		return `it does not start with "refs/"`
	}
	return BadBranch(rest)
}

// BadBranch says why git would refuse name as a branch (the rules of git
// check-ref-format --branch for refs/heads/<name>), or "" if it would not.
func BadBranch(name string) string {
	switch {
	case name == "HEAD" || strings.HasPrefix(name, "-"):
		return `"HEAD" and names starting with "-" are not branches`
	case strings.HasSuffix(name, "."):
		return `it ends with "."`
	case strings.Contains(name, ".."):
		return `it contains ".."`
	case strings.Contains(name, "@{"):
		return `it contains "@{"`
	case name == "@":
		return `it is "@"`
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f || strings.ContainsRune(" ~^:?*[\\", r) {
			return fmt.Sprintf("it contains %q", r)
		}
	}
	for _, seg := range strings.Split(name, "/") {
		switch {
		case seg == "":
			return `it has an empty component ("//", or "/" at an end)`
		case strings.HasPrefix(seg, "."):
			return `a component starts with "."`
		case strings.HasSuffix(seg, ".lock"):
			return `a component ends with ".lock"`
		}
	}
	return ""
}

// badObjectID says what is wrong with id, a SHA-1 or SHA-256 object id in
// lowercase hex that must be there if want and absent if not.
func badObjectID(id string, want bool) string {
	switch {
	case !want && id != "":
		return "is not for this kind of change"
	case !want:
		return ""
	case len(id) != 40 && len(id) != 64:
		return fmt.Sprintf("%q is not an object id", id)
	}
	for _, c := range id {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return fmt.Sprintf("%q is not an object id", id)
		}
	}
	return ""
}
