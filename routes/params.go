package routes

import (
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"lorrycontroller.dev/lc/confgit"
)

// params are a request's parameters: query parameters and the form-encoded
// or JSON body, the body winning.
type params map[string]string

// readParams reads the parameters of a request to any route but
// job-update: its body is small. The body is read once: a second call,
// such as the route's after the CSRF check's, answers what the first
// read.
func (s *Server) readParams(r *http.Request) (params, error) {
	once, _ := r.Context().Value(readOnceKey{}).(*readOnce)
	if once != nil && once.done {
		if once.err != nil {
			return nil, once.err
		}
		r.PostForm = url.Values{}
		for k, v := range once.p {
			r.PostForm.Set(k, v)
		}
		return maps.Clone(once.p), nil
	}
	b, err := s.readBody(r, smallBody, smallBody, smallBody+(32<<10), nil, 0, 0)
	var p params
	if err == nil {
		p = b.params
	}
	if once != nil {
		once.done, once.p, once.err = true, maps.Clone(p), err
	}
	return p, err
}

func (p params) required(name string) (string, error) {
	v, ok := p[name]
	if !ok || v == "" {
		return "", errorf(http.StatusBadRequest, "missing parameter %s", name)
	}
	return v, nil
}

func (p params) int(name string) (int64, error) {
	v, err := p.required(name)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return 0, errorf(http.StatusBadRequest, "parameter %s: %q is not an integer", name, v)
	}
	return n, nil
}

// optionalInt is like int but answers nil for a missing or empty value.
func (p params) optionalInt(name string) (*int64, error) {
	if p[name] == "" {
		return nil, nil
	}
	n, err := p.int(name)
	return &n, err
}

// seconds reads a duration given like a CONFGIT interval ("3600", "30d",
// "PT6H") or in Go syntax ("1h30m").
func (p params) seconds(name string) (*int64, error) {
	v := strings.TrimSpace(p[name])
	if v == "" {
		return nil, nil
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return nil, errorf(http.StatusBadRequest, "parameter %s: %d is negative", name, n)
		}
		return &n, nil
	}
	d, err := confgit.ParseInterval(v)
	if err != nil {
		if d, err = time.ParseDuration(v); err != nil || d <= 0 {
			return nil, errorf(http.StatusBadRequest, "parameter %s: %q is not a duration like 3600, 30d, PT6H or 1h30m", name, v)
		}
	}
	n := int64(d / time.Second)
	return &n, nil
}

// jobID reads the job_id parameter.
func (p params) jobID() (int64, error) {
	id, err := p.int("job_id")
	if err != nil {
		return 0, err
	}
	if id <= 0 {
		return 0, errorf(http.StatusBadRequest, "job_id %d is not a job id", id)
	}
	return id, nil
}

func parseJobID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, errorf(http.StatusBadRequest, "%q is not a job id", s)
	}
	return id, nil
}
