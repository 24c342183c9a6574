package confgit

import (
	"errors"
	"strings"
)

// ConfErrors is every problem found in lorry-controller.conf when there
// is more than one, in the order of the sections. errors.Is(err,
// ErrBadConf) and errors.As(err, &confError) see through it.
type ConfErrors []*ConfError

func (e ConfErrors) Error() string {
	msgs := make([]string, len(e))
	for i, ce := range e {
		msgs[i] = ce.Error()
	}
	return strings.Join(msgs, "; ")
}

func (e ConfErrors) Unwrap() []error {
	out := make([]error, len(e))
	for i, ce := range e {
		out[i] = ce
	}
	return out
}

// joinConfErrors is nil for no errors, the one error, or all of them as
// ConfErrors.
func joinConfErrors(errs []*ConfError) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return ConfErrors(errs)
}

// asConfError is err, an error of section i of type typ, as a
// *ConfError.
func asConfError(i int, typ string, err error) *ConfError {
	var ce *ConfError
	if errors.As(err, &ce) {
		return ce
	}
	return &ConfError{Section: i, Type: typ, Err: err}
}
