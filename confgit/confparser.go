package confgit

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"lorrycontroller.dev/lc/lorryspec"
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

// result is the parsed configuration, or every error, in the order of
// the sections.
func (p *confParser) result() (*parsedConf, error) {
	slices.SortStableFunc(p.errs, func(a, b *ConfError) int { return cmp.Compare(a.Section, b.Section) })
	if err := joinConfErrors(p.errs); err != nil {
		return nil, err
	}
	return p.pc, nil
}

// checked is what a check of a broken configuration reads all the same:
// the sections that parsed, and with them the lorries and scrapers
// sections whose globs are known, so that the errors of the files they
// select are found in the same read.
func (p *confParser) checked() *parsedConf {
	pc := *p.pc
	pc.lorries = slices.Concat(p.pc.lorries, p.broken)
	slices.SortStableFunc(pc.lorries, func(a, b lorriesSection) int { return cmp.Compare(a.index, b.index) })
	return &pc
}

// confParser is lorry-controller.conf as parsed so far: the sections that
// parsed, by name where names must be unique, and the errors of the
// others.
type confParser struct {
	pc       *parsedConf
	hosts    map[string]int // lower-cased host name -> section
	runtimes map[string]int
	queues   map[string]int
	refs     []queueRef
	errs     []*ConfError
	// broken are the lorries and scrapers sections that are broken but
	// for their prefix and globs, and brokenRuntimes the names of the
	// runtime sections that are broken: what a check still reads.
	broken         []lorriesSection
	brokenRuntimes map[string]bool
}

// section parses section i, item, into p.
func (p *confParser) section(i int, item any) *ConfError {
	sec, ok := item.(map[string]any)
	if !ok {
		return &ConfError{Section: i, Err: fmt.Errorf("must be an object, not %s", lorryspec.KindOf(item))}
	}
	tv, ok := sec["type"]
	if !ok {
		return &ConfError{Section: i, Key: "type", Err: errors.New("missing")}
	}
	typ, ok := tv.(string)
	if !ok {
		return &ConfError{Section: i, Key: "type", Err: fmt.Errorf("must be a string, not %s", lorryspec.KindOf(tv))}
	}
	switch {
	case typ == "lorries" || typ == "scrapers":
		ls, err := parseLorriesSection(i, typ, sec)
		if err != nil {
			if ls.globs != nil {
				p.broken = append(p.broken, ls)
			}
			return asConfError(i, typ, err)
		}
		p.pc.lorries = append(p.pc.lorries, ls)
		p.refs = append(p.refs, queueRef{i, typ, ls.queue})
	case typ == "queue":
		q, err := parseQueueSection(i, sec)
		if err != nil {
			// The sections that name it are not broken too.
			if name, _ := sec["name"].(string); name != "" {
				p.queues[name] = i
			}
			return asConfError(i, typ, err)
		}
		if j, dup := p.queues[q.Name]; dup {
			return &ConfError{Section: i, Type: typ, Key: "name",
				Err: fmt.Errorf("queue %q is already configured by section [%d]", q.Name, j)}
		}
		p.queues[q.Name] = i
		p.pc.queues = append(p.pc.queues, q)
	case typ == "runtime":
		rs, err := parseRuntimeSection(i, sec)
		if err != nil {
			if name, _ := sec["name"].(string); name != "" {
				p.brokenRuntimes[name] = true
			}
			return asConfError(i, typ, err)
		}
		if j, dup := p.runtimes[rs.Name]; dup {
			return &ConfError{Section: i, Type: typ, Key: "name",
				Err: fmt.Errorf("runtime %q is already configured by section [%d]", rs.Name, j)}
		}
		p.runtimes[rs.Name] = i
		p.pc.runtimes = append(p.pc.runtimes, rs)
	case hostTypes[typ] != "":
		h, err := parseHostSection(i, typ, sec)
		if err != nil {
			return asConfError(i, typ, err)
		}
		key := strings.ToLower(h.Name)
		if j, dup := p.hosts[key]; dup {
			return &ConfError{Section: i, Type: typ, Key: hostKey(sec),
				Err: fmt.Errorf("host %q is already configured by section [%d]", h.Name, j)}
		}
		p.hosts[key] = i
		p.pc.hosts = append(p.pc.hosts, h)
		p.refs = append(p.refs, queueRef{i, typ, h.Queue})
	default:
		return &ConfError{Section: i, Key: "type", Err: fmt.Errorf("unknown type %q (want lorries, scrapers, runtime, queue, trove, gitlab, gitea or github)", typ)}
	}
	return nil
}
