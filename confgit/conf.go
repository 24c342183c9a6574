package confgit

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"lorrycontroller.dev/lc/lorryspec"
	"lorrycontroller.dev/lc/wire"
)

// ConfFile is the name of the configuration file at the root of CONFGIT.
const ConfFile = "lorry-controller.conf"

// Defaults for keys a section may leave out.
const (
	DefaultInterval     = 24 * time.Hour
	DefaultLsInterval   = 24 * time.Hour
	DefaultLorryTimeout = 3600 * time.Second
)

// Host section types, and the protocol each uses when none is given.
var hostTypes = map[string]string{
	"trove":  "ssh",
	"gitlab": "https",
	"gitea":  "https",
	"github": "https",
}

var protocols = map[string]bool{"ssh": true, "http": true, "https": true}

// ErrBadConf is matched (with errors.Is) by every *ConfError, so a caller
// can tell a configuration the admin must fix from a repository that could
// not be fetched.
var ErrBadConf = errors.New("broken " + ConfFile)

// ConfError says what is wrong with lorry-controller.conf and where. A
// broken file is rejected as a whole: applying part of it could drop every
// lorry of a section that failed to parse.
type ConfError struct {
	Section int    // index of the section in the list, from 0; -1 for the file as a whole
	Type    string // the section's type, when known
	Key     string // the offending key, when there is one
	Err     error
}

func (e *ConfError) Error() string {
	var b strings.Builder
	b.WriteString(ConfFile)
	if e.Section >= 0 {
		fmt.Fprintf(&b, ": section [%d]", e.Section)
		if e.Type != "" {
			fmt.Fprintf(&b, " (%s)", e.Type)
		}
	}
	if e.Key != "" {
		fmt.Fprintf(&b, ": key %q", e.Key)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	return b.String()
}

func (e *ConfError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrBadConf) true for any *ConfError.
func (e *ConfError) Is(target error) bool { return target == ErrBadConf }

// lorriesSection is a "lorries" or a "scrapers" section, kept only until
// its globs have been matched against the tree. Both kinds select files
// the same way; kind says how their specs are read.
type lorriesSection struct {
	index    int
	kind     string // wire.KindLorry or wire.KindScraper
	prefix   string
	globs    [][]string
	interval time.Duration
	timeout  time.Duration
	queue    string
	// schedule, if set, replaces interval for the section's entries
	// that have none of their own.
	schedule schedule
	backoff  backoffKeys
}

type parsedConf struct {
	lorries  []lorriesSection
	hosts    []Host
	runtimes []runtimeSection
	queues   []Queue
}

// queueRef is a section's "queue" key, checked once every queue section
// is known.
type queueRef struct {
	section int
	typ     string
	queue   string
}

// parseConf parses the contents of lorry-controller.conf. Every problem
// is a *ConfError; a section that is broken does not stop the others
// from being checked, so that one read names every broken section (a
// ConfErrors when there is more than one).
func parseConf(data []byte) (*parsedConf, error) {
	p, err := parseSections(data)
	if err != nil {
		return nil, err
	}
	return p.result()
}

// parseSections parses every section of lorry-controller.conf, data. An
// error is of the file as a whole; those of sections are in p.errs.
func parseSections(data []byte) (*confParser, error) {
	v, err := lorryspec.DecodeJSON(data)
	if err != nil {
		return nil, &ConfError{Section: -1, Err: err}
	}
	list, ok := v.([]any)
	if !ok {
		return nil, &ConfError{Section: -1, Err: fmt.Errorf("must be a JSON list of sections, not %s", lorryspec.KindOf(v))}
	}
	p := &confParser{pc: &parsedConf{}, hosts: map[string]int{}, runtimes: map[string]int{}, queues: map[string]int{},
		brokenRuntimes: map[string]bool{}}
	for i, item := range list {
		if err := p.section(i, item); err != nil {
			p.errs = append(p.errs, err)
		}
	}
	for _, r := range p.refs {
		if _, ok := p.queues[r.queue]; !ok && r.queue != DefaultQueue {
			p.errs = append(p.errs, &ConfError{Section: r.section, Type: r.typ, Key: "queue",
				Err: fmt.Errorf("no queue section is named %q", r.queue)})
		}
	}
	return p, nil
}

// ParseHostSection parses one host section on its own, such as
// Host.Section as stored earlier, with the same checks and defaults as
// Read. Errors are *ConfError with Section -1.
func ParseHostSection(section string) (Host, error) {
	v, err := lorryspec.DecodeJSON([]byte(section))
	if err != nil {
		return Host{}, &ConfError{Section: -1, Err: err}
	}
	sec, ok := v.(map[string]any)
	if !ok {
		return Host{}, &ConfError{Section: -1, Err: fmt.Errorf("host section must be an object, not %s", lorryspec.KindOf(v))}
	}
	typ, _ := sec["type"].(string)
	if hostTypes[typ] == "" {
		return Host{}, &ConfError{Section: -1, Key: "type", Err: fmt.Errorf("not a host section type: %s", describe(sec["type"]))}
	}
	return parseHostSection(-1, typ, sec)
}

// parseLorriesSection parses a "lorries" or "scrapers" section. A broken
// one comes back with its error as far as it was read: with its globs
// when its prefix and globs are good.
func parseLorriesSection(i int, typ string, sec map[string]any) (lorriesSection, error) {
	ls := lorriesSection{index: i, kind: wire.KindLorry}
	fail := func(key string, err error) (lorriesSection, error) {
		return ls, &ConfError{Section: i, Type: typ, Key: key, Err: err}
	}
	if typ == "scrapers" {
		ls.kind = wire.KindScraper
	}
	prefix, err := requireString(sec, "prefix")
	if err != nil {
		return fail("prefix", err)
	}
	if err := ValidatePath(prefix); err != nil {
		return fail("prefix", err)
	}
	ls.prefix = prefix
	gv, ok := sec["globs"]
	if !ok {
		return fail("globs", errors.New("missing"))
	}
	globs, err := stringList(gv)
	if err != nil {
		return fail("globs", err)
	}
	split := make([][]string, 0, len(globs))
	for _, g := range globs {
		if err := ValidateGlob(g); err != nil {
			return fail("globs", err)
		}
		split = append(split, splitGlob(g))
	}
	// Set only once every glob is good: a check reads the files of a
	// section broken further on (confParser.checked).
	ls.globs = split
	if ls.interval, err = intervalKey(sec, "interval", DefaultInterval); err != nil {
		return fail("interval", err)
	}
	if ls.timeout, err = intervalKey(sec, "lorry-timeout", DefaultLorryTimeout); err != nil {
		return fail("lorry-timeout", err)
	}
	if ls.queue, err = queueKey(sec); err != nil {
		return fail("queue", err)
	}
	if v, ok := sec["schedule"]; ok {
		if ls.schedule, err = parseSchedule(v); err != nil {
			return fail("schedule", err)
		}
	}
	var key string
	if ls.backoff, key, err = parseBackoffKeys(sec); err != nil {
		return fail(key, err)
	}
	return ls, nil
}

// hostKey names the key a host section took its host from, for messages.
func hostKey(sec map[string]any) string {
	if _, ok := sec["host"]; ok {
		return "host"
	}
	return "trovehost"
}

func parseHostSection(i int, typ string, sec map[string]any) (Host, error) {
	fail := func(key string, err error) (Host, error) {
		return Host{}, &ConfError{Section: i, Type: typ, Key: key, Err: err}
	}
	h := Host{Index: i, Type: typ, Prefixmap: map[string]string{}, Ignore: []string{}}

	name, key, err := hostName(sec)
	if err != nil {
		return fail(key, err)
	}
	h.Name = name
	if err := validateHostName(h.Name); err != nil {
		return fail(hostKey(sec), err)
	}

	h.Protocol = hostTypes[typ]
	if pv, ok := sec["protocol"]; ok {
		p, ok := pv.(string)
		if !ok || !protocols[p] {
			return fail("protocol", fmt.Errorf("must be \"ssh\", \"http\" or \"https\", not %s", describe(pv)))
		}
		h.Protocol = p
	}
	if h.LsInterval, err = intervalKey(sec, "ls-interval", DefaultLsInterval); err != nil {
		return fail("ls-interval", err)
	}
	if h.Interval, err = intervalKey(sec, "interval", DefaultInterval); err != nil {
		return fail("interval", err)
	}
	if h.Timeout, err = intervalKey(sec, "lorry-timeout", DefaultLorryTimeout); err != nil {
		return fail("lorry-timeout", err)
	}
	if h.Queue, err = queueKey(sec); err != nil {
		return fail("queue", err)
	}
	h.OnVanish = OnVanishKeep
	if v, ok := sec["on-vanish"]; ok {
		s, _ := v.(string)
		if s != OnVanishKeep && s != OnVanishArchive && s != OnVanishDelete {
			return fail("on-vanish", fmt.Errorf("must be \"keep\", \"archive\" or \"delete\", not %s", describe(v)))
		}
		h.OnVanish = s
	}
	b, key, err := parseBackoffKeys(sec)
	if err != nil {
		return fail(key, err)
	}
	h.MaxBackoff, h.HardFailAfter = b.maxBackoff, b.hardFailAfter
	if pv, ok := sec["prefixmap"]; ok {
		if err := parsePrefixmap(pv, h.Prefixmap); err != nil {
			return fail("prefixmap", err)
		}
	}
	if iv, ok := sec["ignore"]; ok {
		if h.Ignore, err = parseIgnore(iv); err != nil {
			return fail("ignore", err)
		}
	}
	keys := hostKeys{sec: sec, fail: func(key string, err error) error {
		return &ConfError{Section: i, Type: typ, Key: key, Err: err}
	}}
	if err := keys.parseTypeKeys(&h); err != nil {
		return Host{}, err
	}
	text, err := json.Marshal(sec)
	if err != nil {
		return fail("", err)
	}
	h.Section = string(text)
	return h, nil
}

// hostName is a host section's host name, or the error and the key it is
// in. "trovehost" is what the key was called before hosts other than
// Troves were supported; old configurations still use it.
func hostName(sec map[string]any) (string, string, error) {
	hv, hasHost := sec["host"]
	tv, hasTrove := sec["trovehost"]
	switch {
	case hasHost:
		name, ok := hv.(string)
		if !ok {
			return "", "host", fmt.Errorf("must be a string, not %s", lorryspec.KindOf(hv))
		}
		if ts, same := tv.(string); hasTrove && (!same || ts != name) {
			return "", "trovehost", fmt.Errorf("differs from \"host\" %q; give only one", name)
		}
		return name, "host", nil
	case hasTrove:
		name, ok := tv.(string)
		if !ok {
			return "", "trovehost", fmt.Errorf("must be a string, not %s", lorryspec.KindOf(tv))
		}
		return name, "trovehost", nil
	default:
		return "", "host", errors.New("missing")
	}
}

// parsePrefixmap adds the entries of a host section's "prefixmap", pv,
// to m.
func parsePrefixmap(pv any, m map[string]string) error {
	pm, ok := pv.(map[string]any)
	if !ok {
		return fmt.Errorf("must be an object, not %s", lorryspec.KindOf(pv))
	}
	for k, v := range pm {
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("value of %q must be a string, not %s", k, lorryspec.KindOf(v))
		}
		// The values become prefixes of lorry paths.
		if err := ValidatePath(s); err != nil {
			return fmt.Errorf("value of %q: %w", k, err)
		}
		m[k] = s
	}
	return nil
}

// parseIgnore is a host section's "ignore", iv: a list of globs.
func parseIgnore(iv any) ([]string, error) {
	ig, err := stringList(iv)
	if err != nil {
		return nil, err
	}
	for _, g := range ig {
		if err := ValidateGlob(g); err != nil {
			return nil, err
		}
	}
	return ig, nil
}

// validateHostName keeps the host name usable as the host part of the URLs
// built from it; the scheme comes from "protocol".
func validateHostName(name string) error {
	if name == "" {
		return errors.New("is empty")
	}
	for _, r := range name {
		if unicode.IsControl(r) || unicode.IsSpace(r) {
			return fmt.Errorf("host %q has a space or control character", name)
		}
		if r == '/' || r == '\\' {
			return fmt.Errorf("host %q must be a host name (with an optional port), not a URL or path", name)
		}
	}
	return nil
}

func requireString(sec map[string]any, key string) (string, error) {
	v, ok := sec[key]
	if !ok {
		return "", errors.New("missing")
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("must be a string, not %s", lorryspec.KindOf(v))
	}
	return s, nil
}

func stringList(v any) ([]string, error) {
	l, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("must be a list of strings, not %s", lorryspec.KindOf(v))
	}
	out := make([]string, 0, len(l))
	for j, item := range l {
		s, ok := item.(string)
		if !ok {
			return nil, fmt.Errorf("item [%d] must be a string, not %s", j, lorryspec.KindOf(item))
		}
		out = append(out, s)
	}
	return out, nil
}

func intervalKey(sec map[string]any, key string, def time.Duration) (time.Duration, error) {
	v, ok := sec[key]
	if !ok {
		return def, nil
	}
	return ParseInterval(v)
}

// describe shows a value the way it appeared in the JSON.
func describe(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return lorryspec.KindOf(v)
}
