// Package forgehook reads the push webhooks of the forges that host
// upstream repositories (GitLab, Gitea, GitHub): it checks each forge's
// secret or signature, tells a push from other events, and names the
// pushed repository by URLs in the normalised form that lorries' upstream
// URLs are stored in, so that a push finds its lorries by equality.
package forgehook

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// The forges whose hooks are understood.
const (
	GitLab = "gitlab"
	Gitea  = "gitea"
	GitHub = "github"
)

// ErrForged is a hook whose secret or signature is missing or wrong.
var ErrForged = errors.New("the hook's secret or signature does not match")

// Verify checks that a hook of forge with the given headers and body was
// sent by someone who knows secret:
//
//   - GitLab sends the secret itself in X-Gitlab-Token.
//   - Gitea signs the body with HMAC-SHA256 and sends the hex digest in
//     X-Gitea-Signature, and also as X-Hub-Signature-256: sha256=<hex>.
//   - GitHub sends X-Hub-Signature-256: sha256=<hex>.
//
// Every comparison takes the same time whatever matches.
func Verify(forge string, secret []byte, h http.Header, body []byte) error {
	if len(secret) == 0 {
		return errors.New("no secret is configured")
	}
	switch forge {
	case GitLab:
		got := h.Get("X-Gitlab-Token")
		if got == "" {
			return fmt.Errorf("%w: no X-Gitlab-Token header", ErrForged)
		}
		if subtle.ConstantTimeCompare([]byte(got), secret) != 1 {
			return fmt.Errorf("%w: wrong X-Gitlab-Token", ErrForged)
		}
		return nil
	case Gitea:
		if sig := h.Get("X-Gitea-Signature"); sig != "" {
			return checkHMAC(secret, body, sig, "X-Gitea-Signature")
		}
		fallthrough
	case GitHub:
		sig := h.Get("X-Hub-Signature-256")
		if sig == "" {
			return fmt.Errorf("%w: no X-Hub-Signature-256 header", ErrForged)
		}
		hexSig, ok := strings.CutPrefix(sig, "sha256=")
		if !ok {
			return fmt.Errorf("%w: X-Hub-Signature-256 is not sha256=<hex>", ErrForged)
		}
		return checkHMAC(secret, body, hexSig, "X-Hub-Signature-256")
	}
	return fmt.Errorf("unknown forge %q", forge)
}

func checkHMAC(secret, body []byte, hexSig, header string) error {
	got, err := hex.DecodeString(strings.TrimSpace(hexSig))
	if err != nil {
		return fmt.Errorf("%w: %s is not hex", ErrForged, header)
	}
	if !hmac.Equal(got, Sign(secret, body)) {
		return fmt.Errorf("%w: wrong %s", ErrForged, header)
	}
	return nil
}

// Sign is the HMAC-SHA256 of body under secret, as Gitea and GitHub sign
// their hooks.
func Sign(secret, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return m.Sum(nil)
}

// deliveryHeaders are the headers in which each forge names a delivery:
// the same on the forge's own redeliveries of it, and new for each event.
// Gitea sends GitHub's too; GitLab's Idempotency-Key is newer than its
// event UUID.
var deliveryHeaders = map[string][]string{
	GitLab: {"Idempotency-Key", "X-Gitlab-Event-UUID"},
	Gitea:  {"X-Gitea-Delivery", "X-Gogs-Delivery", "X-GitHub-Delivery"},
	GitHub: {"X-GitHub-Delivery"},
}

// maxDeliveryID is the longest delivery id kept as it is; a longer one is
// kept as its digest.
const maxDeliveryID = 128

// DeliveryKeys are what a verified hook of forge is known by, so that it
// is acted on once however often it is sent: the forge's delivery id, when
// it names one, and the digest of the body. The signature of Gitea and
// GitHub covers the body but not the headers, so a replay of a signed hook
// under a new delivery id is still the same body; a push's body is never
// the same for two pushes, as it names the commits before and after.
func DeliveryKeys(forge string, h http.Header, body []byte) []string {
	var keys []string
	for _, name := range deliveryHeaders[forge] {
		id := strings.TrimSpace(h.Get(name))
		if id == "" {
			continue
		}
		if len(id) > maxDeliveryID || strings.IndexFunc(id, func(r rune) bool { return r < 0x21 || r > 0x7e }) >= 0 {
			sum := sha256.Sum256([]byte(id))
			id = "sha256:" + hex.EncodeToString(sum[:])
		}
		keys = append(keys, "id:"+id)
		break
	}
	sum := sha256.Sum256(body)
	return append(keys, "body:"+hex.EncodeToString(sum[:]))
}

// Event is what a hook says happened.
type Event struct {
	// Name is the forge's name of the event: "Push Hook", "push", "ping".
	Name string
	// Push is set for a push (of branches or tags).
	Push bool
	// Ping is GitHub's (and Gitea's) test of a new hook.
	Ping bool
	// Ref is the ref pushed, for the log.
	Ref string
	// URLs are the pushed repository's URLs, normalised; duplicates
	// dropped.
	URLs []string
}

// Parse reads a verified hook of forge. An event other than a push is
// returned with Push unset and its body unread.
func Parse(forge string, h http.Header, body []byte) (Event, error) {
	var ev Event
	switch forge {
	case GitLab:
		ev.Name = h.Get("X-Gitlab-Event")
		ev.Push = ev.Name == "Push Hook" || ev.Name == "Tag Push Hook"
	case Gitea:
		ev.Name = h.Get("X-Gitea-Event")
		if ev.Name == "" {
			// Older Gitea, and Gogs, name the event only here.
			ev.Name = h.Get("X-Gogs-Event")
		}
		ev.Push = ev.Name == "push"
	case GitHub:
		ev.Name = h.Get("X-GitHub-Event")
		ev.Push = ev.Name == "push"
		ev.Ping = ev.Name == "ping"
	default:
		return ev, fmt.Errorf("unknown forge %q", forge)
	}
	if ev.Name == "" {
		return ev, fmt.Errorf("the hook names no event")
	}
	if !ev.Push {
		return ev, nil
	}
	var urls []string
	if forge == GitLab {
		var p struct {
			Ref     string `json:"ref"`
			Project struct {
				GitHTTPURL string `json:"git_http_url"`
				GitSSHURL  string `json:"git_ssh_url"`
				WebURL     string `json:"web_url"`
			} `json:"project"`
		}
		if err := json.Unmarshal(body, &p); err != nil {
			return ev, fmt.Errorf("read GitLab push: %w", err)
		}
		ev.Ref = p.Ref
		urls = []string{p.Project.GitHTTPURL, p.Project.GitSSHURL, p.Project.WebURL}
	} else {
		var p struct {
			Ref        string `json:"ref"`
			Repository struct {
				CloneURL string `json:"clone_url"`
				SSHURL   string `json:"ssh_url"`
				HTMLURL  string `json:"html_url"`
			} `json:"repository"`
		}
		if err := json.Unmarshal(body, &p); err != nil {
			return ev, fmt.Errorf("read push: %w", err)
		}
		ev.Ref = p.Ref
		urls = []string{p.Repository.CloneURL, p.Repository.SSHURL, p.Repository.HTMLURL}
	}
	seen := map[string]bool{}
	for _, u := range urls {
		if n := NormalizeURL(u); n != "" && !seen[n] {
			seen[n] = true
			ev.URLs = append(ev.URLs, n)
		}
	}
	if len(ev.URLs) == 0 {
		return ev, errors.New("the push names no repository URL")
	}
	return ev, nil
}

// NormalizeURL is the form in which a repository URL is compared: scheme
// and host in lower case, http the same as https, no user information, no
// default port, no query, and no trailing "/" or ".git". An scp-like
// "user@host:path" is taken as ssh://host/path. "" for what is not a
// remote URL (a local path, or nothing).
func NormalizeURL(raw string) string {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return ""
	}
	if !strings.Contains(raw, "://") {
		// user@host:path, the form git takes for ssh.
		hostPart, path, ok := strings.Cut(raw, ":")
		if !ok || strings.Contains(hostPart, "/") || path == "" {
			return ""
		}
		if i := strings.LastIndex(hostPart, "@"); i >= 0 {
			hostPart = hostPart[i+1:]
		}
		raw = "ssh://" + hostPart + "/" + strings.TrimPrefix(path, "/")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	switch scheme {
	case "http", "https":
		scheme = "https"
		if port == "80" || port == "443" {
			port = ""
		}
	case "ssh", "git+ssh", "ssh+git":
		scheme = "ssh"
		if port == "22" {
			port = ""
		}
	case "git":
		if port == "9418" {
			port = ""
		}
	}
	if port != "" {
		host += ":" + port
	}
	path := strings.TrimRight(u.Path, "/")
	path = strings.TrimSuffix(path, ".git")
	path = strings.TrimRight(path, "/")
	if path == "" {
		return ""
	}
	return scheme + "://" + host + path
}

// SpecURL is the normalised upstream URL of a lorry whose text is
// {path: spec}, for a git spec; "" for any other.
func SpecURL(text string) string {
	var specs map[string]struct {
		Type string `json:"type"`
		URL  string `json:"url"`
	}
	if json.Unmarshal([]byte(text), &specs) != nil || len(specs) != 1 {
		return ""
	}
	for _, s := range specs {
		if s.Type == "git" {
			return NormalizeURL(s.URL)
		}
	}
	return ""
}
