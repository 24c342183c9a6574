package downstream

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"lorrycontroller.dev/lc/redact"
)

// The Downstream Host types that --downstream-host-type names.
const (
	TypeNone   = "none"
	TypeLocal  = "local"
	TypeGitLab = "gitlab"
	TypeGitea  = "gitea"
	TypeGerrit = "gerrit"
	TypeGitano = "gitano"
)

// Config says which Downstream Host mirrors are pushed to and how
// to reach it. RegisterFlags binds it to flags, whose names are also the
// keys of the WEBAPP's key = value configuration file.
type Config struct {
	// Type is one of the Type* constants.
	Type string
	// Host is, for gitlab and gitea, the base URL of the server
	// ("https://" is assumed without a scheme; a path prefix is kept);
	// for gerrit and gitano, the host name that ssh connects to.
	Host string
	// Token is the API token of gitlab and gitea. TokenFile names a file
	// holding it instead, read by New, so that the token need
	// not be on a command line. Exactly one of them is needed.
	Token     string
	TokenFile string
	// Visibility of the groups, organisations and repositories that gitlab
	// and gitea create: private (the default), internal or public.
	Visibility string
	// PushProtocol is how minions push to gitlab and gitea: "ssh" (the
	// default; the server's ssh clone URL), or "https" with the token in
	// the URL. gerrit and gitano push over ssh only.
	PushProtocol string
	// SSHUser is the ssh user for gerrit (default "lorry") and gitano
	// (default "git"); SSHPort overrides the port (gerrit: 29418).
	SSHUser string
	SSHPort int
	// SSHCommand is the ssh program, looked up in PATH without a slash.
	SSHCommand string
	// LocalBaseDir is where a local downstream keeps its repositories.
	LocalBaseDir string
	// SkipCertificateCheck turns off TLS certificate verification for the
	// gitlab and gitea APIs (--downstream-check-certificates=false). The
	// zero value verifies, so a Config built in code is safe.
	SkipCertificateCheck bool
	// Timeout bounds each API call and each ssh command (default 1m).
	Timeout time.Duration
}

// RegisterFlags defines the downstream flags on fs, with their defaults.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Type, "downstream-host-type", TypeNone,
		"where mirrors are pushed: none (lorry only updates its mirrors), local, gitlab, gitea, gerrit or gitano")
	fs.StringVar(&c.Host, "downstream-host", "",
		"the Downstream Host: base `URL` of GitLab or Gitea (https:// when no scheme is given), or ssh host name of Gerrit or Gitano")
	fs.StringVar(&c.Token, "downstream-token", "",
		"API `token` of GitLab or Gitea; keep it in the configuration file or use --downstream-token-file, not the command line")
	fs.StringVar(&c.TokenFile, "downstream-token-file", "",
		"read the API token of GitLab or Gitea from this `file` at start")
	fs.StringVar(&c.Visibility, "downstream-visibility", "private",
		"visibility of what GitLab or Gitea downstreams create: private, internal or public")
	fs.StringVar(&c.PushProtocol, "downstream-push-protocol", "ssh",
		"how minions push to GitLab or Gitea: ssh, or https with the token in the push URL")
	fs.StringVar(&c.SSHUser, "downstream-ssh-user", "",
		"ssh `user` of Gerrit (default lorry) or Gitano (default git)")
	fs.IntVar(&c.SSHPort, "downstream-ssh-port", 0,
		"ssh `port` of Gerrit (default 29418) or Gitano (default: ssh's)")
	fs.StringVar(&c.SSHCommand, "downstream-ssh-command", "ssh",
		"ssh `program` that runs the create commands of Gerrit and Gitano")
	fs.StringVar(&c.LocalBaseDir, "local-base-directory", "",
		"`dir`ectory of the bare repositories of a local downstream, <dir>/<path>.git")
	fs.Var(negatedBool{&c.SkipCertificateCheck}, "downstream-check-certificates",
		"verify the TLS certificate of the GitLab or Gitea API")
	fs.DurationVar(&c.Timeout, "downstream-timeout", time.Minute,
		"how long one API call or ssh command to the Downstream Host may take")
}

// negatedBool is a boolean flag stored inverted, so that the field's zero
// value is the safe default while the flag keeps its positive name.
type negatedBool struct{ p *bool }

func (n negatedBool) String() string {
	if n.p == nil {
		return ""
	}
	return strconv.FormatBool(!*n.p)
}

func (n negatedBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*n.p = !v
	return nil
}

func (n negatedBool) IsBoolFlag() bool { return true }

// withDefaults fills what flags would have defaulted, for a config built in
// code.
func (c Config) withDefaults() Config {
	if c.Type == "" {
		c.Type = TypeNone
	}
	if c.Visibility == "" {
		c.Visibility = "private"
	}
	if c.PushProtocol == "" {
		c.PushProtocol = "ssh"
	}
	if c.SSHCommand == "" {
		c.SSHCommand = "ssh"
	}
	if c.Timeout == 0 {
		c.Timeout = time.Minute
	}
	if c.SSHUser == "" {
		switch c.Type {
		case TypeGerrit:
			c.SSHUser = "lorry"
		case TypeGitano:
			c.SSHUser = "git"
		}
	}
	if c.SSHPort == 0 && c.Type == TypeGerrit {
		c.SSHPort = 29418
	}
	return c
}

var sshHostPattern = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$`)
var sshUserPattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`)

// Validate reports the first setting that cannot work, naming its flag.
// It does not read the token file; New does.
func (c Config) Validate() error {
	c = c.withDefaults()
	if c.Timeout < 0 {
		return errors.New("--downstream-timeout must be positive")
	}
	switch c.Type {
	case TypeNone:
		return nil
	case TypeLocal:
		if c.LocalBaseDir == "" {
			return errors.New("--downstream-host-type local needs --local-base-directory")
		}
		return nil
	case TypeGitLab, TypeGitea:
		if c.Host == "" {
			return fmt.Errorf("--downstream-host-type %s needs --downstream-host, the server's base URL", c.Type)
		}
		if _, err := parseDownstreamBaseURL(c.Host); err != nil {
			return err
		}
		switch {
		case c.Token == "" && c.TokenFile == "":
			return fmt.Errorf("--downstream-host-type %s needs --downstream-token-file (or --downstream-token)", c.Type)
		case c.Token != "" && c.TokenFile != "":
			return errors.New("give --downstream-token or --downstream-token-file, not both")
		}
		switch c.Visibility {
		case "private", "internal", "public":
		default:
			return fmt.Errorf("--downstream-visibility %q: want private, internal or public", c.Visibility)
		}
		switch c.PushProtocol {
		case "ssh", "https":
		default:
			return fmt.Errorf("--downstream-push-protocol %q: want ssh or https", c.PushProtocol)
		}
		return nil
	case TypeGerrit, TypeGitano:
		if c.Host == "" {
			return fmt.Errorf("--downstream-host-type %s needs --downstream-host, the ssh host name", c.Type)
		}
		if !sshHostPattern.MatchString(c.Host) {
			return fmt.Errorf("--downstream-host %q: want a host name for ssh (the port goes in --downstream-ssh-port)", redact.URLs(c.Host))
		}
		if !sshUserPattern.MatchString(c.SSHUser) {
			return fmt.Errorf("--downstream-ssh-user %q is not a user name", c.SSHUser)
		}
		if c.SSHPort < 0 || c.SSHPort > 65535 {
			return fmt.Errorf("--downstream-ssh-port %d is not a port", c.SSHPort)
		}
		if c.PushProtocol != "ssh" {
			return fmt.Errorf("--downstream-push-protocol %q: %s is pushed to over ssh only", c.PushProtocol, c.Type)
		}
		return nil
	default:
		return fmt.Errorf("--downstream-host-type %q: want none, local, gitlab, gitea, gerrit or gitano", c.Type)
	}
}

// Option adjusts New.
type Option func(*downstreamOptions)

type downstreamOptions struct {
	log *slog.Logger
}

// WithLogger logs what the downstream creates. Without it
// nothing is logged.
func WithLogger(log *slog.Logger) Option {
	return func(o *downstreamOptions) { o.log = log }
}

// New validates cfg, reads the token file, and returns the
// Host it describes.
func New(cfg Config, opts ...Option) (Host, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	o := downstreamOptions{}
	for _, opt := range opts {
		opt(&o)
	}
	if o.log == nil {
		o.log = slog.New(slog.DiscardHandler)
	}
	switch cfg.Type {
	case TypeLocal:
		return Local{BaseDir: cfg.LocalBaseDir}, nil
	case TypeGitLab, TypeGitea:
		token, err := cfg.token()
		if err != nil {
			return nil, err
		}
		base, err := parseDownstreamBaseURL(cfg.Host)
		if err != nil {
			return nil, err
		}
		client := downstreamHTTPClient(cfg)
		if cfg.Type == TypeGitLab {
			return newGitLabDownstream(cfg, base, token, client, o.log), nil
		}
		return newGiteaDownstream(cfg, base, token, client, o.log), nil
	case TypeGerrit:
		return &Gerrit{ssh: newDownstreamSSH(cfg), log: o.log}, nil
	case TypeGitano:
		return &Gitano{ssh: newDownstreamSSH(cfg), log: o.log}, nil
	}
	return None{}, nil
}

// token is the API token, from the configuration or its file.
func (c Config) token() (string, error) {
	if c.TokenFile == "" {
		return strings.TrimSpace(c.Token), nil
	}
	data, err := os.ReadFile(c.TokenFile)
	if err != nil {
		return "", fmt.Errorf("read --downstream-token-file: %w", err)
	}
	token := strings.TrimSpace(string(data))
	if token == "" {
		return "", fmt.Errorf("--downstream-token-file %s is empty", c.TokenFile)
	}
	if strings.ContainsAny(token, "\r\n") {
		return "", fmt.Errorf("--downstream-token-file %s holds more than one line", c.TokenFile)
	}
	return token, nil
}

// parseDownstreamBaseURL reads --downstream-host for the API drivers.
// Credentials in it are refused: they would end up in error messages,
// while the token has a place of its own.
func parseDownstreamBaseURL(host string) (*url.URL, error) {
	s := host
	if !strings.Contains(s, "://") {
		s = "https://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("--downstream-host: %s", redact.URLs(err.Error()))
	}
	shown := redact.URLs(host)
	switch {
	case u.Scheme != "https" && u.Scheme != "http":
		return nil, fmt.Errorf("--downstream-host %q: want an http or https URL", shown)
	case u.Host == "":
		return nil, fmt.Errorf("--downstream-host %q has no host name", shown)
	case u.User != nil:
		return nil, fmt.Errorf("--downstream-host %q: put no credentials in the URL; use --downstream-token-file", shown)
	case u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("--downstream-host %q: want a base URL without query or fragment", shown)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

// downstreamHTTPClient is the client of the API drivers. Redirects stay on
// the configured scheme and host, because the token travels in a header
// that net/http forwards to any host a redirect names.
func downstreamHTTPClient(cfg Config) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if cfg.SkipCertificateCheck {
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
	}
	return &http.Client{Transport: tr, Timeout: cfg.Timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return errors.New("too many redirects")
			}
			first := via[0].URL
			if req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
				return fmt.Errorf("redirected to another server (%s://%s)", req.URL.Scheme, req.URL.Host)
			}
			return nil
		}}
}

// httpsPushURL puts user and token into a clone URL that an API gave.
func httpsPushURL(cloneURL, user, token string) (string, error) {
	u, err := url.Parse(cloneURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", fmt.Errorf("the server gives no usable https clone URL (%q)", redact.URLs(cloneURL))
	}
	u.User = url.UserPassword(user, token)
	return u.String(), nil
}

// splitDownstreamPath checks a lorry path for an API driver and splits it
// into segments; the host needs at least min of them.
func splitDownstreamPath(path string, least int) ([]string, error) {
	if path == "" || strings.HasPrefix(path, "/") || strings.ContainsAny(path, "\\\x00") {
		return nil, fmt.Errorf("downstream path %q is not a relative path", path)
	}
	segs := strings.Split(path, "/")
	for _, seg := range segs {
		if seg == "" || seg == "." || seg == ".." {
			return nil, fmt.Errorf("downstream path %q has a %q segment", path, seg)
		}
	}
	if len(segs) < least {
		return nil, fmt.Errorf("downstream path %q needs at least %d segments (group/name)", path, least)
	}
	return segs, nil
}

// downstreamAPI makes the JSON calls of the gitlab and gitea drivers. The
// token goes in a header only, never in a URL, so that no error message or
// log line built from a URL can show it.
type downstreamAPI struct {
	name       string // "GitLab" or "Gitea", for messages
	base       *url.URL
	authHeader string
	authValue  string
	client     *http.Client
	message    func(body []byte) string // the API's error message in body
}

// maxDownstreamAnswer bounds what is read of an answer; the objects asked
// for are small.
const maxDownstreamAnswer = 4 << 20

// call sends in (when not nil) as JSON to path, which is escaped already
// and may carry a query, and decodes a 2xx answer into out (when not nil).
// Any other status is a *downstreamAPIError.
func (a *downstreamAPI) call(ctx context.Context, method, path string, in, out any) error {
	escaped, query, _ := strings.Cut(path, "?")
	u := *a.base
	u.RawPath = a.base.EscapedPath() + escaped
	unescaped, err := url.PathUnescape(u.RawPath)
	if err != nil {
		return fmt.Errorf("%s %s %s: %w", a.name, method, escaped, err)
	}
	u.Path = unescaped
	u.RawQuery = query
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return fmt.Errorf("%s %s %s: %w", a.name, method, escaped, err)
	}
	req.Header.Set(a.authHeader, a.authValue)
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.client.Do(req)
	if err != nil {
		// The URL, which holds no credentials, names the server that
		// could not be reached.
		var urlErr *url.Error
		if errors.As(err, &urlErr) {
			err = urlErr.Err
		}
		return fmt.Errorf("%s %s %s: %s", a.name, method, u.String(), redact.URLs(err.Error()))
	}
	defer resp.Body.Close()
	data, readErr := io.ReadAll(io.LimitReader(resp.Body, maxDownstreamAnswer))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return &downstreamAPIError{
			API: a.name, Method: method, Path: escaped,
			Status: resp.StatusCode, Message: shortMessage(a.message(data)),
		}
	}
	if readErr != nil {
		return fmt.Errorf("%s %s %s: read answer: %w", a.name, method, escaped, readErr)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("%s %s %s: decode answer: %w", a.name, method, escaped, err)
		}
	}
	return nil
}

// downstreamAPIError is an answer of a Downstream Host's API with a status
// that is not 2xx.
type downstreamAPIError struct {
	API, Method, Path string
	Status            int
	Message           string
}

func (e *downstreamAPIError) Error() string {
	status := fmt.Sprintf("%d %s", e.Status, http.StatusText(e.Status))
	s := fmt.Sprintf("%s %s %s: %s", e.API, e.Method, e.Path, status)
	// GitLab's message is often the status again ("403 Forbidden").
	if e.Message != "" && e.Message != status {
		s += ": " + e.Message
	}
	return s
}

// apiStatus is the status of the API answer behind err, or 0.
func apiStatus(err error) int {
	var e *downstreamAPIError
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// plainMessage is what an answer that is not the API's JSON says, such as
// a proxy's error page.
func plainMessage(body []byte) string {
	return string(body)
}

// shortMessage keeps an API message fit for one log line, with any URL
// credentials hidden.
func shortMessage(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		cut := 300
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return redact.URLs(s)
}
