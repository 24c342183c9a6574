// Package upstream lists the repositories of Upstream Hosts (Troves,
// GitLab, Gitea and GitHub), each by its own API, and generates a lorry
// for each repository that a host section maps to a lorry path. A host
// section's keys are decoded by confgit into a confgit.Host; NewLister
// turns one into the Lister of its type.
package upstream

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"lorrycontroller.dev/lc/confgit"
	"lorrycontroller.dev/lc/redact"
)

// Repo is a repository that an Upstream Host lists.
type Repo struct {
	// Path is the repository's path on the host, such as "group/sub/name",
	// without ".git".
	Path string
	// CloneURL is the URL to mirror it from, for the host section's
	// protocol. It may carry credentials; show it only through
	// redact.URLs.
	CloneURL      string
	Description   string
	DefaultBranch string
}

// Lister lists the repositories of an Upstream Host.
type Lister interface {
	List(ctx context.Context) ([]Repo, error)
}

// Defaults for ListerOptions.
const (
	DefaultRequestTimeout   = 2 * time.Minute
	DefaultMaxRateLimitWait = time.Minute
)

// ListerOptions are what every Lister shares, whatever its host.
type ListerOptions struct {
	// Transport carries HTTP requests; nil means http.DefaultTransport.
	// A host whose section says "check-certificates": false gets its own
	// clone with verification off, so that no other host loses it; that
	// needs Transport to be an *http.Transport.
	Transport http.RoundTripper
	// Logger hears about pages, waits and lines that were skipped; nil
	// discards.
	Logger *slog.Logger
	// RequestTimeout bounds one HTTP request, body included, and one run
	// of ssh; 0 means DefaultRequestTimeout.
	RequestTimeout time.Duration
	// MaxRateLimitWait is the longest a Lister waits for a host's rate
	// limit to reset before asking again; a longer wait fails the listing
	// with the time of the reset instead. 0 means DefaultMaxRateLimitWait,
	// a negative value never waits.
	MaxRateLimitWait time.Duration
	// SSHCommand is the ssh client that lists Troves over ssh; "" means
	// "ssh" found on PATH.
	SSHCommand string
	// Now and Sleep measure and spend rate-limit waits; nil means the
	// real ones. Resets are wall-clock times set by the host, so Now must
	// not be a pretend clock.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
}

// NewLister returns the Lister for an Upstream Host section, as confgit
// decoded it. It refuses a Host that no lister could list, and options
// that its section cannot be listed with. Those errors are
// *confgit.ConfError with Section -1 (a caller that knows the section's
// index may set it) and never quote a secret.
func NewLister(h confgit.Host, opts ListerOptions) (Lister, error) {
	opts = opts.withDefaults()
	protocols, ok := listerProtocols[h.Type]
	if !ok {
		return nil, hostError(h, "type", fmt.Errorf("no lister for host type %q (want trove, gitlab, gitea or github)", h.Type))
	}
	if !slices.Contains(protocols, h.Protocol) {
		return nil, hostError(h, "protocol", fmt.Errorf("%q is not a protocol for a %s host (want %s)", h.Protocol, h.Type, strings.Join(protocols, ", ")))
	}
	switch h.Type {
	case "gitlab":
		return newGitLabLister(h, opts)
	case "gitea":
		return newGiteaLister(h, opts)
	case "github":
		return newGitHubLister(h, opts)
	}
	return newTroveLister(h, opts)
}

func (o ListerOptions) withDefaults() ListerOptions {
	if o.Transport == nil {
		o.Transport = http.DefaultTransport
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.MaxRateLimitWait == 0 {
		o.MaxRateLimitWait = DefaultMaxRateLimitWait
	}
	if o.SSHCommand == "" {
		o.SSHCommand = "ssh"
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Sleep == nil {
		o.Sleep = sleepContext
	}
	return o
}

func sleepContext(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Protocols each host type can list and clone with. Plain HTTP is refused
// for github.com by confgit: GitHub Enterprise may serve it, github.com
// does not.
var listerProtocols = map[string][]string{
	"trove":  {"ssh", "http", "https"},
	"gitlab": {"ssh", "http", "https"},
	"gitea":  {"ssh", "http", "https"},
	"github": {"ssh", "http", "https"},
}

// hostError says what about h a lister cannot work with.
func hostError(h confgit.Host, key string, err error) error {
	return &confgit.ConfError{Section: -1, Type: h.Type, Key: key, Err: err}
}

// forgeAPIScheme is the scheme of a forge's API: its clones may go over
// ssh, but its API is always HTTP, in the clear only if the section says
// http.
func forgeAPIScheme(protocol string) string {
	if protocol == "http" {
		return "http"
	}
	return "https"
}

// newListerHTTPClient gives a host its client. Redirects stay on the host
// and never downgrade to http: token headers such as PRIVATE-TOKEN are not
// among those net/http strips when a redirect leaves the host.
func newListerHTTPClient(h confgit.Host, opts ListerOptions) (*http.Client, bool, error) {
	rt := opts.Transport
	owned := false
	if h.SkipCertificateCheck {
		t, ok := rt.(*http.Transport)
		if !ok {
			return nil, false, hostError(h, "check-certificates", fmt.Errorf("false needs an *http.Transport to clone, not %T", rt))
		}
		t = t.Clone()
		if t.TLSClientConfig == nil {
			t.TLSClientConfig = &tls.Config{}
		}
		t.TLSClientConfig.InsecureSkipVerify = true
		rt, owned = t, true
	}
	c := &http.Client{
		Transport: rt,
		Timeout:   opts.RequestTimeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			first := via[0].URL
			switch {
			case len(via) >= 10:
				return errors.New("stopped after 10 redirects")
			case !strings.EqualFold(req.URL.Host, first.Host):
				return fmt.Errorf("refusing a redirect to another host, %s", req.URL.Host)
			case first.Scheme == "https" && req.URL.Scheme != "https":
				return errors.New("refusing a redirect from https to http")
			}
			return nil
		},
	}
	return c, owned, nil
}

// upstreamAPI is what the HTTP listers share: one host's API, its
// credentials (always in headers, so they never reach a URL, a log line or
// an error), rate-limit waits and page following.
type upstreamAPI struct {
	host    string // host name, for messages
	base    *url.URL
	client  *http.Client
	owned   bool // client has its own transport, to close after a listing
	header  http.Header
	secrets []string // scrubbed from any text taken from an answer
	authKey string   // the section key to check when access is refused
	nameKey string   // the section key naming what a 404 did not find
	log     *slog.Logger
	maxWait time.Duration
	now     func() time.Time
	sleep   func(context.Context, time.Duration) error
}

func newUpstreamAPI(h confgit.Host, opts ListerOptions, base *url.URL) (*upstreamAPI, error) {
	client, owned, err := newListerHTTPClient(h, opts)
	if err != nil {
		return nil, err
	}
	hdr := http.Header{}
	hdr.Set("User-Agent", "lorry-controller")
	return &upstreamAPI{
		host:    h.Name,
		base:    base,
		client:  client,
		owned:   owned,
		header:  hdr,
		log:     opts.Logger.With("host", h.Name, "type", h.Type),
		maxWait: opts.MaxRateLimitWait,
		now:     opts.Now,
		sleep:   opts.Sleep,
	}, nil
}

// setSecret sets a header that carries a credential.
func (a *upstreamAPI) setSecret(name, value string, secrets ...string) {
	a.header.Set(name, value)
	a.secrets = append(a.secrets, value)
	a.secrets = append(a.secrets, secrets...)
}

// endpoint is the URL of an API path (already escaped) with a query.
func (a *upstreamAPI) endpoint(escapedPath string, q url.Values) (*url.URL, error) {
	u, err := url.Parse(a.base.String() + escapedPath)
	if err != nil {
		return nil, err
	}
	u.RawQuery = q.Encode()
	return u, nil
}

// scrub hides credentials in text that came from a host.
func (a *upstreamAPI) scrub(s string) string {
	s = redact.URLs(s)
	for _, sec := range a.secrets {
		if sec != "" {
			s = strings.ReplaceAll(s, sec, "***")
		}
	}
	return s
}

// done releases what a listing held: a transport of the host's own keeps
// idle connections that nothing else would reuse.
func (a *upstreamAPI) done() {
	if a.owned {
		a.client.CloseIdleConnections()
	}
}

// apiPage is one successful answer.
type apiPage struct {
	header http.Header
	body   []byte
}

const (
	maxListPageSize   = 64 << 20 // a page of 100 projects is a few hundred KiB
	maxListErrorBody  = 64 << 10
	maxRateLimitWaits = 3
)

// get fetches u, waiting out rate limits within maxWait. Only a 200 is a
// page; anything else is an error that says what the host answered.
func (a *upstreamAPI) get(ctx context.Context, u *url.URL) (*apiPage, error) {
	for waits := 0; ; waits++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return nil, fmt.Errorf("GET %s: %w", u, err)
		}
		req.Header = a.header.Clone()
		resp, err := a.client.Do(req)
		if err != nil {
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err
			}
			return nil, fmt.Errorf("GET %s: %w", u, err)
		}
		limit := int64(maxListErrorBody)
		if resp.StatusCode == http.StatusOK {
			limit = maxListPageSize
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("GET %s: read answer: %w", u, err)
		}
		if resp.StatusCode == http.StatusOK {
			if int64(len(body)) > limit {
				return nil, fmt.Errorf("GET %s: answer is larger than %d bytes", u, limit)
			}
			return &apiPage{header: resp.Header, body: body}, nil
		}
		wait, reset, limited := rateLimitWait(resp, body, a.now())
		if !limited {
			return nil, a.statusError(u, resp, body)
		}
		if err := a.checkWait(u, wait, reset, waits); err != nil {
			return nil, err
		}
		a.log.Info("rate limited; waiting", "url", u.String(), "status", resp.StatusCode, "wait", wait.String())
		if err := a.sleep(ctx, wait); err != nil {
			return nil, fmt.Errorf("GET %s: waiting for the rate limit to reset: %w", u, err)
		}
	}
}

func (a *upstreamAPI) checkWait(u *url.URL, wait time.Duration, reset time.Time, waits int) error {
	when := reset.UTC().Format(time.RFC3339)
	switch {
	case waits >= maxRateLimitWaits:
		return fmt.Errorf("GET %s: still rate limited after %d waits; the limit resets at %s", u, waits, when)
	case a.maxWait < 0 || wait > a.maxWait:
		bound := "does not wait"
		if a.maxWait >= 0 {
			bound = "waits at most " + a.maxWait.String()
		}
		return fmt.Errorf("GET %s: rate limited by %s until %s (in %s), and a listing %s; list it again after that",
			u, a.host, when, wait.Round(time.Second), bound)
	}
	return nil
}

// rateLimitWait tells a rate-limit refusal from any other, and how long
// to wait before asking again. GitHub answers 403 or 429 with
// x-ratelimit-remaining 0 and x-ratelimit-reset (Unix seconds), or with
// retry-after; its secondary limit may say neither, and then one minute is
// the least to wait. GitLab answers 429 with Retry-After and
// RateLimit-Reset.
func rateLimitWait(resp *http.Response, body []byte, now time.Time) (time.Duration, time.Time, bool) {
	if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusForbidden {
		return 0, time.Time{}, false
	}
	wait := func(d time.Duration) (time.Duration, time.Time, bool) {
		if d < time.Second {
			d = time.Second
		}
		return d, now.Add(d), true
	}
	if ra := strings.TrimSpace(resp.Header.Get("Retry-After")); ra != "" {
		if secs, err := strconv.ParseInt(ra, 10, 64); err == nil && secs >= 0 {
			return wait(time.Duration(min(secs, 1<<30)) * time.Second)
		}
		if t, err := http.ParseTime(ra); err == nil {
			return wait(t.Sub(now))
		}
	}
	for _, prefix := range []string{"X-RateLimit-", "RateLimit-"} {
		if strings.TrimSpace(resp.Header.Get(prefix+"Remaining")) != "0" {
			continue
		}
		if reset, err := strconv.ParseInt(strings.TrimSpace(resp.Header.Get(prefix+"Reset")), 10, 64); err == nil {
			return wait(time.Unix(reset, 0).Sub(now))
		}
		return wait(time.Minute)
	}
	if resp.StatusCode == http.StatusTooManyRequests || bytes.Contains(bytes.ToLower(body), []byte("secondary rate limit")) {
		return wait(time.Minute)
	}
	return 0, time.Time{}, false
}

// statusError says what the host answered instead of a page, and which
// key of the section to look at when that is likely the cause.
func (a *upstreamAPI) statusError(u *url.URL, resp *http.Response, body []byte) error {
	msg := a.scrub(upstreamMessage(body))
	var b strings.Builder
	fmt.Fprintf(&b, "GET %s: %s", u, resp.Status)
	if msg != "" {
		fmt.Fprintf(&b, ": %q", msg)
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		fmt.Fprintf(&b, "; check %q", a.authKey)
	case http.StatusNotFound:
		if a.nameKey != "" {
			fmt.Fprintf(&b, "; check %q", a.nameKey)
		}
	}
	return errors.New(b.String())
}

// upstreamMessage takes the message out of an error answer: GitLab, Gitea
// and GitHub put it in "message" (GitLab sometimes in "error"); other
// answers are shown as text, cut short.
func upstreamMessage(body []byte) string {
	var v struct {
		Message any    `json:"message"`
		Error   string `json:"error"`
	}
	if json.Unmarshal(body, &v) == nil {
		switch m := v.Message.(type) {
		case string:
			if m != "" {
				return m
			}
		case nil:
		default:
			if b, err := json.Marshal(m); err == nil {
				return clipText(string(b), 300)
			}
		}
		if v.Error != "" {
			return v.Error
		}
	}
	return clipText(strings.Join(strings.Fields(string(body)), " "), 300)
}

// clipText shortens s to about n bytes, never splitting a character.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// nextPageFunc finds the page after the one at cur, which held n items,
// seen in all so far; nil when that was the last.
type nextPageFunc func(cur *url.URL, p *apiPage, n, seen int) (*url.URL, error)

const maxListPages = 100000

// pages fetches first and every page after it, handing each body to
// decode, which returns how many items it held. An empty page ends the
// listing whatever the headers say, so a host that keeps offering a next
// page cannot keep a listing going forever; nor can one whose next page
// is a page already fetched.
func (a *upstreamAPI) pages(ctx context.Context, first *url.URL, next nextPageFunc, decode func([]byte) (int, error)) error {
	fetched := map[string]bool{}
	seen := 0
	for cur := first; cur != nil; {
		key := cur.String()
		if fetched[key] {
			return fmt.Errorf("GET %s: the host's next page is one already listed", key)
		}
		if len(fetched) >= maxListPages {
			return fmt.Errorf("GET %s: stopped after %d pages", key, maxListPages)
		}
		fetched[key] = true
		p, err := a.get(ctx, cur)
		if err != nil {
			return err
		}
		n, err := decode(p.body)
		if err != nil {
			return fmt.Errorf("GET %s: %w", key, err)
		}
		seen += n
		a.log.Debug("listed page", "url", key, "items", n, "total", seen)
		if n == 0 {
			return nil
		}
		if cur, err = next(cur, p, n, seen); err != nil {
			return err
		}
	}
	return nil
}

// follow resolves a Link target against the page it came with. Only its
// path and query are used: the host and scheme stay those of the API, so
// the token is never sent elsewhere, even by a host that names itself
// differently behind a proxy.
func (a *upstreamAPI) follow(cur *url.URL, target string) (*url.URL, error) {
	u, err := cur.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("GET %s: bad next page link: %w", cur, err)
	}
	if !strings.EqualFold(u.Host, cur.Host) {
		a.log.Debug("next page link names another host; asking the API's host", "link_host", u.Host)
	}
	u.Scheme, u.Host, u.User, u.Fragment = cur.Scheme, cur.Host, nil, ""
	return u, nil
}

// pageURL returns u with its page query parameter set to n.
func pageURL(u *url.URL, n int) *url.URL {
	v := *u
	q := v.Query()
	q.Set("page", strconv.Itoa(n))
	v.RawQuery = q.Encode()
	return &v
}

// linkHeaderRel returns the target of the first link with relation rel in
// the Link header fields (RFC 8288), or "".
func linkHeaderRel(h http.Header, rel string) string {
	for _, field := range h.Values("Link") {
		s := field
		for {
			s = strings.TrimLeft(s, " \t,")
			if s == "" || s[0] != '<' {
				break
			}
			end := strings.IndexByte(s, '>')
			if end < 0 {
				break
			}
			target := s[1:end]
			s = s[end+1:]
			i, quoted := 0, false
			for ; i < len(s); i++ {
				if s[i] == '"' {
					quoted = !quoted
				} else if s[i] == ',' && !quoted {
					break
				}
			}
			params := s[:i]
			s = s[i:]
			for _, p := range strings.Split(params, ";") {
				k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
				if !ok || !strings.EqualFold(strings.TrimSpace(k), "rel") {
					continue
				}
				for _, r := range strings.Fields(strings.Trim(strings.TrimSpace(v), `"`)) {
					if strings.EqualFold(r, rel) {
						return target
					}
				}
			}
		}
	}
	return ""
}

// newForgeAPI makes the API client that the listers of GitLab, Gitea and
// GitHub share: the section's token goes in authHeader after authPrefix,
// and is hidden in every message; the API is at the section's "api-url",
// or else at defaultBase. It also returns the token to put in clone URLs,
// if the section asks for it.
func newForgeAPI(h confgit.Host, opts ListerOptions, defaultBase, authHeader, authPrefix string) (*upstreamAPI, string, error) {
	base := h.APIURL
	if base == nil {
		u, err := url.Parse(defaultBase)
		if err != nil {
			return nil, "", hostError(h, "api-url", errors.New("is not a URL"))
		}
		if err := confgit.CheckAPIURL(u); err != nil {
			return nil, "", hostError(h, "api-url", err)
		}
		u.Path = strings.TrimRight(u.Path, "/")
		base = u
	}
	api, err := newUpstreamAPI(h, opts, base)
	if err != nil {
		return nil, "", err
	}
	api.authKey = h.TokenKey
	if h.Token != "" {
		api.setSecret(authHeader, authPrefix+h.Token, h.Token)
	}
	cloneTok := ""
	if h.CloneWithToken {
		cloneTok = h.Token
	}
	return api, cloneTok, nil
}

// listedRepo is what the APIs of GitLab, Gitea and GitHub say of a
// repository.
type listedRepo struct {
	path, httpURL, sshURL, description, defaultBranch string
}

// cloneAs chooses the clone URL of listed repositories: the ssh one, or
// the http(s) one carrying token as the password of tokenUser (when there
// is a token to clone with).
type cloneAs struct {
	ssh              bool
	tokenUser, token string
}

// listAll follows the pages from first, decoding each with decode, and
// returns each repository once, with its clone URL chosen by c.
func (a *upstreamAPI) listAll(ctx context.Context, first *url.URL, next nextPageFunc, c cloneAs,
	decode func([]byte) ([]listedRepo, error)) ([]Repo, error) {
	var set repoSet
	err := a.pages(ctx, first, next, func(body []byte) (int, error) {
		repos, err := decode(body)
		if err != nil {
			return 0, err
		}
		for _, r := range repos {
			clone := r.sshURL
			if !c.ssh {
				clone = cloneURLWithToken(r.httpURL, c.tokenUser, c.token)
			}
			set.add(Repo{Path: r.path, CloneURL: clone, Description: r.description, DefaultBranch: r.defaultBranch})
		}
		return len(repos), nil
	})
	return set.repos, err
}

// repoSet collects a listing's repositories. A repository listed twice,
// as offset pages do when projects are added during the listing, is kept
// once.
type repoSet struct {
	repos []Repo
	seen  map[string]bool
}

func (s *repoSet) add(r Repo) {
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	if s.seen[r.Path] {
		return
	}
	s.seen[r.Path] = true
	s.repos = append(s.repos, r)
}

// cloneURLWithToken returns an http(s) clone URL that carries user and
// token as its credentials, or u unchanged if tok is empty or u is not
// http(s).
func cloneURLWithToken(u, user, tok string) string {
	if tok == "" {
		return u
	}
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") {
		return u
	}
	p.User = url.UserPassword(user, tok)
	return p.String()
}

// decodeRepoList decodes a JSON list of items.
func decodeRepoList[T any](body []byte) ([]T, error) {
	var items []T
	if err := json.Unmarshal(body, &items); err != nil {
		return nil, fmt.Errorf("answer is not a JSON list of repositories: %w", err)
	}
	return items, nil
}
