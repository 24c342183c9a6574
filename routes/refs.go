package routes

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"lorrycontroller/statedb"
)

// maxRefsBytes bounds the refs parameter of job-update; lorry reports at
// most maxRefsPerKind refs of each kind, which take far less unless their
// names are very long.
const maxRefsBytes = 2 << 20

// maxRefsPerKind is lorry's own bound on each list of ref changes.
const maxRefsPerKind = 1000

// refChangesJSON are the refs a job changed, as job-update takes them and
// the job's answer shows them.
type refChangesJSON struct {
	Created   []refChangeJSON `json:"created"`
	Updated   []refChangeJSON `json:"updated"`
	Deleted   []refChangeJSON `json:"deleted"`
	Truncated bool            `json:"truncated"`
}

type refChangeJSON struct {
	Ref string `json:"ref"`
	Old string `json:"old,omitempty"`
	New string `json:"new,omitempty"`
}

// refsParam reads the optional refs parameter: a JSON object of the shape
// of refChangesJSON, of valid ref names and object ids, each ref with the
// ids its kind has.
func (p params) refs(name string) (*statedb.RefChanges, error) {
	v := p[name]
	if v == "" {
		return nil, nil
	}
	if len(v) > maxRefsBytes {
		return nil, errorf(http.StatusBadRequest, "parameter %s: %d bytes, more than %d", name, len(v), maxRefsBytes)
	}
	var w refChangesJSON
	dec := json.NewDecoder(strings.NewReader(v))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return nil, errorf(http.StatusBadRequest, "parameter %s: %v", name, err)
	}
	if dec.More() {
		return nil, errorf(http.StatusBadRequest, "parameter %s: more than one JSON value", name)
	}
	c := &statedb.RefChanges{Truncated: w.Truncated}
	for _, kind := range []struct {
		name     string
		in       []refChangeJSON
		out      *[]statedb.RefChange
		old, new bool
	}{
		{"created", w.Created, &c.Created, false, true},
		{"updated", w.Updated, &c.Updated, true, true},
		{"deleted", w.Deleted, &c.Deleted, true, false},
	} {
		if len(kind.in) > maxRefsPerKind {
			return nil, errorf(http.StatusBadRequest, "parameter %s: %d %s refs, more than %d", name, len(kind.in), kind.name, maxRefsPerKind)
		}
		*kind.out = make([]statedb.RefChange, 0, len(kind.in))
		for _, r := range kind.in {
			if why := badRef(r.Ref); why != "" {
				return nil, errorf(http.StatusBadRequest, "parameter %s: %s ref %q: %s", name, kind.name, r.Ref, why)
			}
			for _, id := range []struct {
				what  string
				value string
				want  bool
			}{{"old", r.Old, kind.old}, {"new", r.New, kind.new}} {
				if why := badObjectID(id.value, id.want); why != "" {
					return nil, errorf(http.StatusBadRequest, "parameter %s: %s ref %q: %s %s", name, kind.name, r.Ref, id.what, why)
				}
			}
			*kind.out = append(*kind.out, statedb.RefChange{Ref: r.Ref, Old: r.Old, New: r.New})
		}
	}
	return c, nil
}

// badRef says why git would refuse name as a full ref name under refs/,
// or "" if it would not.
func badRef(name string) string {
	rest, ok := strings.CutPrefix(name, "refs/")
	if !ok {
		return `it does not start with "refs/"`
	}
	return badBranch(rest)
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

// refsWire is c as the API shows it; nil when unknown.
func refsWire(c *statedb.RefChanges) *refChangesJSON {
	if c == nil {
		return nil
	}
	w := &refChangesJSON{Truncated: c.Truncated}
	for _, kind := range []struct {
		in  []statedb.RefChange
		out *[]refChangeJSON
	}{{c.Created, &w.Created}, {c.Updated, &w.Updated}, {c.Deleted, &w.Deleted}} {
		*kind.out = make([]refChangeJSON, 0, len(kind.in))
		for _, r := range kind.in {
			*kind.out = append(*kind.out, refChangeJSON{Ref: r.Ref, Old: r.Old, New: r.New})
		}
	}
	return w
}

// jobRefs reads the ref changes of job id: nil when none were recorded.
func jobRefs(tx *statedb.Tx, r *http.Request, id int64) (*statedb.RefChanges, error) {
	c, err := tx.JobRefs(r.Context(), id)
	if errors.Is(err, statedb.ErrNotFound) {
		return nil, nil
	}
	return c, err
}
