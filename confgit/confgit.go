// Package confgit reads the controller's configuration from the committed
// tree of a branch of the CONFGIT repository: lorry-controller.conf at the
// root, the .lorry files its "lorries" sections select, the .scraper files
// its "scrapers" sections select, and the directories of its runtimes.
//
// Only committed content counts, so what the controller runs is always what
// an admin pushed, and Config.Commit names it.
package confgit

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"lorrycontroller.dev/lc/cron"
	"lorrycontroller.dev/lc/lorryspec"
	"lorrycontroller.dev/lc/wire"
)

// Config is the configuration found in one commit of CONFGIT.
type Config struct {
	Commit  string      // hex id of the commit the configuration was read from; empty from Parse
	Lorries []Lorry     // sorted by Path; paths are unique
	Hosts   []Host      // in file order; names are unique
	Errors  []FileError // .lorry files and specs that were skipped, and why
	// Kept names what the Errors leave undefined: .lorry files that could
	// not be read at all, and lorry paths whose spec is broken. An admin's
	// typo should not drop mirrors and their history, so the lorries these
	// defined before are to be kept as they were until the files are fixed.
	Kept Kept
	// Runtimes are the "runtime" sections, in file order; names are unique.
	Runtimes []Runtime
	// Queues are the "queue" sections, in file order; names are unique.
	Queues []Queue
}

// Kept names the .lorry files and lorry paths whose previous lorries stay.
type Kept struct {
	Files []string // paths of .lorry files in the repository
	Paths []string // lorry paths
}

// FileError is a .lorry file, or one spec in it, that was skipped.
type FileError struct {
	File string `json:"file"` // path of the .lorry file in the repository
	// Spec is the name of the spec that was skipped, "" for the whole
	// file; Error names it too.
	Spec string `json:"spec,omitempty"`
	// Key is the key of the spec at fault, where known; Error names it
	// too.
	Key   string `json:"key,omitempty"`
	Error string `json:"error"`
}

// Lorry is one run-queue entry defined by a .lorry or a .scraper file.
type Lorry struct {
	Path string // section prefix + "/" + spec name
	// Text is {Path: spec} as compact JSON with sorted keys, so the same
	// spec always gives the same Text and a changed spec is seen as changed.
	Text     string
	Kind     string // wire.KindLorry or wire.KindScraper
	Type     string // the spec's "type"; wire.KindScraper for a scraper
	File     string // the .lorry or .scraper file that defines it
	Interval time.Duration
	Timeout  time.Duration // "lorry-timeout" of the section
	// Schedule is the "schedule" of the spec, or else of the section, as
	// compact JSON with sorted keys; "" for none, when Interval applies.
	// Cron is it parsed.
	Schedule string
	Cron     *cron.Item
	// Runtime is the runtime a scraper runs in, as of this commit; zero
	// for a lorry.
	Runtime Runtime
	Queue   string // "queue" of the section
	// MaxBackoff and HardFailAfter are "max-backoff" and
	// "hard-fail-after" of the section.
	MaxBackoff    time.Duration
	HardFailAfter int64
}

// Host is an Upstream Host section. Its repositories become lorries when
// the host is listed, not when the configuration is read.
type Host struct {
	// Index is the host's section in lorry-controller.conf, from 0; -1
	// for a section parsed on its own (ParseHostSection).
	Index      int
	Name       string // "host", or the older "trovehost"
	Type       string // trove, gitlab, gitea or github
	Protocol   string // ssh, http or https
	LsInterval time.Duration
	Interval   time.Duration
	Timeout    time.Duration // "lorry-timeout"
	Prefixmap  map[string]string
	Ignore     []string
	Queue      string // "queue" of the section, for the host's lorries
	// OnVanish is what becomes of the downstream repository of a
	// repository that vanishes from the listing: OnVanishKeep (the
	// default), OnVanishArchive or OnVanishDelete ("on-vanish").
	OnVanish string
	// MaxBackoff and HardFailAfter are "max-backoff" and
	// "hard-fail-after", for the host's lorries.
	MaxBackoff    time.Duration
	HardFailAfter int64

	// The keys below are read by some types of host only; each is its
	// zero value when the section leaves it out or its type does not
	// read it.

	// Group is gitlab's "group": the full path of the group to list,
	// subgroups included; "" lists every project the token can see.
	Group string
	// Org and User are gitea's and github's "org" and "user": the owner
	// whose repositories are listed. At most one is set; github needs
	// one.
	Org, User string
	// Token is the API token of gitlab, gitea and github: "private-token",
	// or gitea's and github's "token". TokenKey is the key it came from,
	// or the first that could give it, to name in messages. Token is a
	// secret: never show it.
	Token, TokenKey string
	// APIURL is "api-url" of gitlab, gitea and github, without a trailing
	// slash; nil for the default of the type and host.
	APIURL *url.URL
	// CloneWithToken is "clone-with-token": clone URLs carry Token, for
	// private repositories over HTTP(S).
	CloneWithToken bool
	// SkipCertificateCheck is "check-certificates": false, which turns
	// TLS certificate checks off for the listing and the generated
	// lorries. The zero value checks, so a Host built in code is safe.
	SkipCertificateCheck bool
	// SSHUser is trove's "ssh-user", "git" by default.
	SSHUser string
	// Auth is trove's "auth"; nil without it.
	Auth *HostAuth

	// Section is the whole section as JSON with sorted keys. It holds
	// secrets: store it, never show it. ParseHostSection reads it back.
	Section string
}

// The values of a host section's "on-vanish".
const (
	OnVanishKeep    = "keep"
	OnVanishArchive = "archive"
	OnVanishDelete  = "delete"
)

// maxFileSize bounds what is read into memory from one file; configuration
// files are small, and a huge one is a mistake to report, not to load.
const maxFileSize = 16 << 20

var errTooLarge = fmt.Errorf("file is larger than %d bytes", maxFileSize)

// tree is the committed content Config is built from.
type tree interface {
	// conf returns lorry-controller.conf, or ok false when there is none.
	conf() (data []byte, ok bool, err error)
	// files lists the regular files, with slash-separated paths.
	files() ([]string, error)
	read(name string) ([]byte, error)
	// dir finds a directory: its git tree id, and whether it holds
	// requirements.txt. fs.ErrNotExist when there is no such directory.
	dir(path string) (id string, hasRequirements bool, err error)
	// file reads one regular file, listed by files or not; fs.ErrNotExist
	// when there is none.
	file(name string) ([]byte, error)
}

// Parse builds a Config from fsys the way Read builds it from a commit:
// lorry-controller.conf at the root of fsys, regular files for the globs.
// Directories named .git are skipped. Commit is left empty. It is for
// checks: a broken lorry-controller.conf is a *BrokenConf.
func Parse(fsys fs.FS) (*Config, error) {
	return build(context.Background(), fsTree{fsys}, time.Now(), true)
}

// BrokenConf is what a check (Parse, ReadRevision) finds of a
// configuration whose lorry-controller.conf is broken in some of its
// sections: Err is every error of the file, matching ErrBadConf, and
// Config what the rest defines, with the Errors of the files that the
// globs of its lorries and scrapers sections select, broken sections'
// among them when their prefix and globs are good. So one check names
// every error of the configuration, not those of lorry-controller.conf
// first and of the other files once it is fixed. read-configuration
// reads no file of such a configuration, which it refuses whole.
type BrokenConf struct {
	Err    error
	Config *Config
}

func (e *BrokenConf) Error() string { return e.Err.Error() }
func (e *BrokenConf) Unwrap() error { return e.Err }

// build parses lorry-controller.conf first, then reads the files its
// globs select. A broken one is reported without reading any .lorry file,
// unless check is set: then it is a *BrokenConf. A schedule must have an
// event in the 50 years from now.
func build(ctx context.Context, t tree, now time.Time, check bool) (*Config, error) {
	var lorries []Lorry
	cfg, err := walk(ctx, t, now, 0, check, nil, func(batch []Lorry) error {
		lorries = append(lorries, batch...)
		return nil
	})
	var broken *BrokenConf
	if errors.As(err, &broken) {
		cfg = broken.Config
	} else if err != nil {
		return nil, err
	}
	slices.SortFunc(lorries, func(a, b Lorry) int { return strings.Compare(a.Path, b.Path) })
	cfg.Lorries = append(cfg.Lorries, lorries...)
	if broken != nil {
		return nil, broken
	}
	return cfg, nil
}

// confCheck is what a check reads of lorry-controller.conf, broken or
// not: the sections as far as they parsed (confParser.checked), the
// runtimes that resolve and the names of those that do not, and every
// error of the file.
type confCheck struct {
	pc             *parsedConf
	runtimes       []Runtime
	brokenRuntimes map[string]bool
	errs           []*ConfError
}

// checkConf reads lorry-controller.conf, data, for a check. An error is
// of the file as a whole (it is not a list of sections), or of t.
func checkConf(t tree, data []byte, now time.Time) (*confCheck, error) {
	p, err := parseSectionsAt(data, now)
	if err != nil {
		return nil, err
	}
	c := &confCheck{pc: p.checked(), brokenRuntimes: p.brokenRuntimes, errs: p.errs}
	for _, rs := range c.pc.runtimes {
		r, err := resolveRuntime(t, rs)
		var ce *ConfError
		switch {
		case errors.As(err, &ce):
			c.errs = append(c.errs, ce)
			c.brokenRuntimes[rs.Name] = true
		case err != nil:
			return nil, err
		default:
			c.runtimes = append(c.runtimes, r)
		}
	}
	slices.SortStableFunc(c.errs, func(a, b *ConfError) int { return cmp.Compare(a.Section, b.Section) })
	return c, nil
}

// ErrSkipFiles, returned by the sections function of Source.ReadEach, stops
// the read before any .lorry or .scraper file is read, without error.
var ErrSkipFiles = errors.New("skip the files")

// walk parses lorry-controller.conf, hands the Config of its sections to
// sections (if not nil), then reads the files its globs select in the
// order of their names and hands their lorries to each in batches of
// about n (all of them at once if n is 0), in the order of their files.
// It returns the Config without Lorries, with the Errors and Kept of
// every file. A schedule must have an event in the 50 years from now.
//
// With check set, a lorry-controller.conf broken in some of its sections
// is read as checkConf reads it, and the error is a *BrokenConf whose
// Config is the one walk would have returned.
func walk(ctx context.Context, t tree, now time.Time, n int, check bool, sections func(*Config) error, each func([]Lorry) error) (*Config, error) {
	cfg := &Config{Lorries: []Lorry{}, Hosts: []Host{}, Runtimes: []Runtime{}, Errors: []FileError{}, Queues: []Queue{}}
	pc, brokenRuntimes, confErr, err := readSections(t, now, check, cfg)
	if err != nil {
		return nil, err
	}
	// The configuration read so far, or with confErr what a check read.
	done := func() (*Config, error) {
		if confErr != nil {
			return nil, &BrokenConf{Err: confErr, Config: cfg}
		}
		return cfg, nil
	}
	if sections != nil {
		err := sections(cfg)
		if errors.Is(err, ErrSkipFiles) {
			return cfg, nil
		}
		if err != nil {
			return nil, err
		}
	}
	if pc == nil || len(pc.lorries) == 0 {
		return done()
	}
	names, err := t.files()
	if err != nil {
		return nil, err
	}
	sort.Strings(names)

	b := &builder{cfg: cfg, from: newPathSet(), reported: map[FileError]bool{},
		runtimes: map[string]Runtime{}, brokenRuntimes: brokenRuntimes, files: map[string]bool{},
		batch: n, each: each, now: now}
	for _, r := range cfg.Runtimes {
		b.runtimes[r.Name] = r
	}
	for _, name := range names {
		b.files[name] = true
	}
	if err := b.readFiles(ctx, t, pc.lorries, names); err != nil {
		return nil, err
	}
	return done()
}

// readSections parses lorry-controller.conf, if the tree has one, into
// cfg's hosts, queues and runtimes. With check set, as walk's, it also
// gives the runtimes whose sections are broken, and the sections' errors
// joined; without, a broken section is the error.
func readSections(t tree, now time.Time, check bool, cfg *Config) (pc *parsedConf, brokenRuntimes map[string]bool, confErr, err error) {
	data, ok, err := t.conf()
	if err != nil || !ok {
		return nil, nil, nil, err
	}
	if check {
		c, err := checkConf(t, data, now)
		if err != nil {
			return nil, nil, nil, err
		}
		cfg.Hosts = append(cfg.Hosts, c.pc.hosts...)
		cfg.Queues = append(cfg.Queues, c.pc.queues...)
		cfg.Runtimes = append(cfg.Runtimes, c.runtimes...)
		return c.pc, c.brokenRuntimes, joinConfErrors(c.errs), nil
	}
	if pc, err = parseConfAt(data, now); err != nil {
		return nil, nil, nil, err
	}
	cfg.Hosts = append(cfg.Hosts, pc.hosts...)
	cfg.Queues = append(cfg.Queues, pc.queues...)
	if cfg.Runtimes, err = resolveRuntimes(t, pc.runtimes); err != nil {
		return nil, nil, nil, err
	}
	return pc, nil, nil, nil
}

// readFiles reads the files of names (sorted) that the globs of sections
// select, adds their lorries, and hands them to each in batches.
func (b *builder) readFiles(ctx context.Context, t tree, sections []lorriesSection, names []string) error {
	var matched []*lorriesSection
	for i, name := range names {
		if i%512 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		matched = matchSections(sections, strings.Split(name, "/"), matched[:0])
		if len(matched) == 0 {
			continue
		}
		data, err := t.read(name)
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return ctxErr
			}
			b.report(name, err.Error())
			b.cfg.Kept.Files = append(b.cfg.Kept.Files, name)
			continue
		}
		b.addFile(name, data, matched)
		if b.batch > 0 && len(b.pending) >= b.batch {
			if err := b.flush(); err != nil {
				return err
			}
		}
	}
	return b.flush()
}

// matchSections appends to matched the sections of which a glob matches
// a file whose path has the segments segs.
func matchSections(sections []lorriesSection, segs []string, matched []*lorriesSection) []*lorriesSection {
	for j := range sections {
		ls := &sections[j]
		for _, g := range ls.globs {
			if matchSegments(g, segs) {
				matched = append(matched, ls)
				break
			}
		}
	}
	return matched
}

type builder struct {
	cfg      *Config
	from     *pathSet // lorry paths defined so far, and their files
	reported map[FileError]bool
	runtimes map[string]Runtime // by name
	files    map[string]bool    // regular files of the tree, for "config"
	now      time.Time          // what a schedule must have an event within 50 years of

	// brokenRuntimes are the runtimes whose sections a check found
	// broken: a scraper of one of them is not faulted for it.
	brokenRuntimes map[string]bool

	// pending are the lorries not yet handed to each, which takes them
	// in batches of about batch (all at once if batch is 0).
	pending []Lorry
	batch   int
	each    func([]Lorry) error
}

// flush hands the pending lorries, if any, to each, sorted by path.
func (b *builder) flush() error {
	if len(b.pending) == 0 {
		return nil
	}
	slices.SortFunc(b.pending, func(x, y Lorry) int { return strings.Compare(x.Path, y.Path) })
	if err := b.each(b.pending); err != nil {
		return err
	}
	// A new slice, not the old one emptied: each may keep what it was
	// given.
	b.pending = make([]Lorry, 0, b.batch)
	return nil
}

// reportSpec reports that spec key of file is skipped, and why.
func (b *builder) reportSpec(file, key string, err error) {
	fe := FileError{File: file, Spec: key, Error: fmt.Sprintf("spec %q: %v", key, err)}
	if ke := (*lorryspec.KeyError)(nil); errors.As(err, &ke) {
		fe.Key = ke.Key
	}
	b.add(fe)
}

func (b *builder) report(file, msg string) {
	b.add(FileError{File: file, Error: msg})
}

func (b *builder) add(fe FileError) {
	if !b.reported[fe] {
		b.reported[fe] = true
		b.cfg.Errors = append(b.cfg.Errors, fe)
	}
}

// addFile adds the specs of one .lorry or .scraper file under every
// section that selected it. Keys are taken in sorted order so that which of
// two clashing specs wins does not depend on map order.
func (b *builder) addFile(name string, data []byte, sections []*lorriesSection) {
	specs, err := lorryspec.ParseFile(data)
	if err != nil {
		b.report(name, err.Error())
		b.cfg.Kept.Files = append(b.cfg.Kept.Files, name)
		return
	}
	for _, key := range slices.Sorted(maps.Keys(specs)) {
		s := specs[key]
		// A file selected by both kinds of section is read as each.
		checked := map[string]checkedSpec{}
		for _, ls := range sections {
			c, ok := checked[ls.kind]
			if !ok {
				c = b.check(ls.kind, s)
				checked[ls.kind] = c
				if c.err != nil {
					b.reportSpec(name, key, c.err)
				}
			}
			p := ls.prefix + "/" + key
			if c.err != nil {
				if ValidatePath(p) == nil {
					b.cfg.Kept.Paths = append(b.cfg.Kept.Paths, p)
				}
				continue
			}
			if err := ValidatePath(p); err != nil {
				b.reportSpec(name, key, err)
				continue
			}
			sched, err := specSchedule(s.Value, ls.schedule, b.now)
			if err != nil {
				b.reportSpec(name, key, err)
				b.cfg.Kept.Paths = append(b.cfg.Kept.Paths, p)
				continue
			}
			if first, dup := b.from.find(p); dup {
				b.reportSpec(name, key, fmt.Errorf("path %q is already defined by %s", p, first))
				continue
			}
			text, err := json.Marshal(map[string]any{p: s.Value})
			if err != nil {
				b.reportSpec(name, key, err)
				continue
			}
			b.from.add(p, name)
			b.pending = append(b.pending, Lorry{
				Path:     p,
				Text:     string(text),
				Kind:     ls.kind,
				Type:     c.typ,
				File:     name,
				Interval: ls.interval,
				Timeout:  ls.timeout,
				Schedule: sched.text,
				Cron:     sched.item,
				Runtime:  c.runtime,
				Queue:    ls.queue,

				MaxBackoff:    ls.backoff.maxBackoff,
				HardFailAfter: ls.backoff.hardFailAfter,
			})
		}
	}
}

// checkedSpec is a spec as a section of one kind reads it.
type checkedSpec struct {
	typ     string
	runtime Runtime
	err     error
}

func (b *builder) check(kind string, e lorryspec.Entry) checkedSpec {
	if e.Err != nil {
		return checkedSpec{err: e.Err}
	}
	if kind == wire.KindLorry {
		typ, err := lorryspec.Check(e.Value)
		return checkedSpec{typ: typ, err: err}
	}
	sc, err := ParseScraper(e.Value)
	if err != nil {
		return checkedSpec{err: err}
	}
	r, ok := b.runtimes[sc.Runtime]
	if !ok && b.brokenRuntimes[sc.Runtime] {
		// Its runtime's section has the error, already reported.
		return checkedSpec{typ: wire.KindScraper}
	}
	if !ok {
		return checkedSpec{err: &lorryspec.KeyError{Key: "runtime", Err: fmt.Errorf("unknown runtime %q", sc.Runtime)}}
	}
	for _, c := range sc.Config {
		if !b.files[c] {
			return checkedSpec{err: &lorryspec.KeyError{Key: "config", Err: fmt.Errorf("config file %q is not in the repository", c)}}
		}
	}
	return checkedSpec{typ: wire.KindScraper, runtime: r}
}

// clone copies c so that a cached Config cannot be changed through a copy
// handed to a caller.
func (c *Config) clone() *Config {
	out := *c
	out.Lorries = slices.Clone(c.Lorries)
	out.Runtimes = slices.Clone(c.Runtimes)
	out.Errors = slices.Clone(c.Errors)
	out.Kept = Kept{Files: slices.Clone(c.Kept.Files), Paths: slices.Clone(c.Kept.Paths)}
	out.Hosts = make([]Host, len(c.Hosts))
	for i, h := range c.Hosts {
		h.Prefixmap = maps.Clone(h.Prefixmap)
		h.Ignore = slices.Clone(h.Ignore)
		out.Hosts[i] = h
	}
	return &out
}
