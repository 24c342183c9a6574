package confgit

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode"

	"lorrycontroller.dev/lc/lorryspec"
)

// HostAuth is a trove section's "auth": the HTTP basic credentials of
// its listing over HTTP(S).
type HostAuth struct {
	Username string
	Password string // a secret: never show it
}

// hostKeys reads the keys of a host section that only some types of host
// read, into h, whose Type, Name and Protocol are set. A key that a type
// does not read is ignored, like any unknown key.
type hostKeys struct {
	sec  map[string]any
	fail func(key string, err error) error
}

// parseTypeKeys reads the keys of h's type.
func (k hostKeys) parseTypeKeys(h *Host) error {
	switch h.Type {
	case "gitlab":
		return k.parseGitLab(h)
	case "gitea":
		return k.parseGitea(h)
	case "github":
		return k.parseGitHub(h)
	case "trove":
		return k.parseTrove(h)
	}
	return nil
}

// The GitLab lister reads "private-token", "group", "api-url",
// "check-certificates" and "clone-with-token".
func (k hostKeys) parseGitLab(h *Host) (err error) {
	if h.Group, err = k.name("group"); err != nil {
		return err
	}
	return k.forgeKeys(h, "private-token")
}

// The Gitea lister reads "private-token" or "token", "org" or "user" (at
// most one; neither lists every repository the token can see), "api-url",
// "check-certificates" and "clone-with-token".
func (k hostKeys) parseGitea(h *Host) (err error) {
	if h.Org, err = k.name("org"); err != nil {
		return err
	}
	if h.User, err = k.name("user"); err != nil {
		return err
	}
	if h.Org != "" && h.User != "" {
		return k.fail("user", errors.New(`cannot be given with "org"; give one, or neither to list every repository`))
	}
	return k.forgeKeys(h, "private-token", "token")
}

// The GitHub lister reads "org" or "user" (exactly one), "private-token"
// or "token", "api-url", "check-certificates" and "clone-with-token".
func (k hostKeys) parseGitHub(h *Host) (err error) {
	if h.Org, err = k.name("org"); err != nil {
		return err
	}
	if h.User, err = k.name("user"); err != nil {
		return err
	}
	switch {
	case h.Org != "" && h.User != "":
		return k.fail("user", errors.New(`cannot be given with "org"; give one`))
	case h.Org == "" && h.User == "":
		return k.fail("org", errors.New(`missing: a github section needs "org" or "user"`))
	}
	// GitHub Enterprise may serve plain HTTP, github.com does not.
	if strings.EqualFold(h.Name, "github.com") && h.Protocol == "http" {
		return k.fail("protocol", errors.New(`"http" is not a protocol for github.com (want ssh or https)`))
	}
	return k.forgeKeys(h, "private-token", "token")
}

// forgeKeys reads the keys that GitLab, Gitea and GitHub share: the API
// token under the first of tokenKeys that is set, "clone-with-token",
// "api-url" and "check-certificates".
func (k hostKeys) forgeKeys(h *Host, tokenKeys ...string) (err error) {
	if h.Token, h.TokenKey, err = k.token(tokenKeys...); err != nil {
		return err
	}
	if h.CloneWithToken, err = k.boolean("clone-with-token", false); err != nil {
		return err
	}
	if h.CloneWithToken {
		if h.Protocol == "ssh" {
			return k.fail("clone-with-token", errors.New("is for http and https; ssh clones authenticate with a key"))
		}
		if h.Token == "" {
			return k.fail("clone-with-token", fmt.Errorf("needs %q", h.TokenKey))
		}
	}
	if h.APIURL, err = k.apiURL(); err != nil {
		return err
	}
	return k.checkCertificates(h, true)
}

// The Trove lister reads "ssh-user" (default "git"), "auth" ({"username":
// ..., "password": ...}, for HTTP(S)) and, over HTTP(S) only,
// "check-certificates".
func (k hostKeys) parseTrove(h *Host) error {
	// The host name follows the user and "@" on ssh's command line; one
	// that looks like an option is a mistake however it is used.
	if strings.HasPrefix(h.Name, "-") {
		return k.fail("host", fmt.Errorf("%q must not start with '-'", h.Name))
	}
	user, ok, err := k.str("ssh-user")
	if err != nil {
		return err
	}
	if !ok {
		user = "git"
	}
	if strings.HasPrefix(user, "-") || strings.ContainsAny(user, "@:/") ||
		strings.ContainsFunc(user, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) }) {
		return k.fail("ssh-user", fmt.Errorf("%q is not a user name", user))
	}
	h.SSHUser = user
	if h.Auth, err = k.auth(); err != nil {
		return err
	}
	return k.checkCertificates(h, h.Protocol != "ssh")
}

// checkCertificates reads "check-certificates", true unless the section
// turns it off. A value that is not a boolean is refused only when the
// host reads the key; when it does not, the key still turns certificate
// checks off for the generated lorries if it is false.
func (k hostKeys) checkCertificates(h *Host, read bool) error {
	v, ok := k.sec["check-certificates"]
	if !ok {
		return nil
	}
	b, isBool := v.(bool)
	if !isBool && read {
		return k.fail("check-certificates", fmt.Errorf("must be true or false, not %s", lorryspec.KindOf(v)))
	}
	h.SkipCertificateCheck = isBool && !b
	return nil
}

// str returns a string key, and whether it is there at all. An empty
// string is refused: it is always a mistake, and would otherwise mean the
// same as leaving the key out.
func (k hostKeys) str(key string) (string, bool, error) {
	v, ok := k.sec[key]
	if !ok {
		return "", false, nil
	}
	str, ok := v.(string)
	if !ok {
		return "", true, k.fail(key, fmt.Errorf("must be a string, not %s", lorryspec.KindOf(v)))
	}
	if str == "" {
		return "", true, k.fail(key, errors.New("is empty"))
	}
	return str, true, nil
}

func (k hostKeys) boolean(key string, def bool) (bool, error) {
	v, ok := k.sec[key]
	if !ok {
		return def, nil
	}
	b, ok := v.(bool)
	if !ok {
		return false, k.fail(key, fmt.Errorf("must be true or false, not %s", lorryspec.KindOf(v)))
	}
	return b, nil
}

// name checks a key naming a group, organisation or user, which goes into
// an API path.
func (k hostKeys) name(key string) (string, error) {
	v, _, err := k.str(key)
	if err != nil {
		return "", err
	}
	if strings.ContainsFunc(v, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) }) {
		return "", k.fail(key, fmt.Errorf("%q has a space or control character", v))
	}
	if strings.HasPrefix(v, "/") || strings.HasSuffix(v, "/") {
		return "", k.fail(key, fmt.Errorf("%q must not start or end with a slash", v))
	}
	return v, nil
}

// token reads the API token from the first of keys that is set; two
// different values are refused, since either could be the stale one. The
// returned key is the one to name in messages. Neither the value nor any
// part of it ever goes into an error.
func (k hostKeys) token(keys ...string) (tok, key string, err error) {
	for _, name := range keys {
		v, ok, err := k.str(name)
		if err != nil {
			return "", "", err
		}
		if !ok {
			continue
		}
		if strings.ContainsFunc(v, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) }) {
			return "", "", k.fail(name, errors.New("has a space or control character"))
		}
		if tok != "" && v != tok {
			return "", "", k.fail(name, fmt.Errorf("differs from %q; give only one", key))
		}
		if tok == "" {
			tok, key = v, name
		}
	}
	if key == "" {
		key = keys[0]
	}
	return tok, key, nil
}

// apiURL reads "api-url", nil when it is not set. It is the URL the API's
// paths are appended to, such as https://gitlab.example.com/api/v4.
func (k hostKeys) apiURL() (*url.URL, error) {
	raw, ok, err := k.str("api-url")
	if err != nil || !ok {
		return nil, err
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, k.fail("api-url", errors.New("is not a URL"))
	}
	if err := CheckAPIURL(u); err != nil {
		return nil, k.fail("api-url", err)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

// CheckAPIURL says what is wrong with u as the base URL of a forge's API,
// if anything: it must be http or https, name a host, and carry neither
// credentials, which have keys of their own, nor a query or fragment.
func CheckAPIURL(u *url.URL) error {
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return errors.New("must be an http or https URL")
	case u.Host == "":
		return errors.New("has no host")
	case u.User != nil:
		return errors.New("must not carry credentials; give the token in its own key")
	case u.RawQuery != "" || u.Fragment != "":
		return errors.New("must not have a query or fragment")
	}
	return nil
}

// auth reads "auth": {"username": ..., "password": ...}.
func (k hostKeys) auth() (*HostAuth, error) {
	v, ok := k.sec["auth"]
	if !ok {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, k.fail("auth", fmt.Errorf(`must be an object {"username": ..., "password": ...}, not %s`, lorryspec.KindOf(v)))
	}
	get := func(name string) (string, error) {
		v, ok := m[name]
		if !ok {
			return "", k.fail("auth", fmt.Errorf("%q is missing", name))
		}
		s, ok := v.(string)
		if !ok {
			return "", k.fail("auth", fmt.Errorf("%q must be a string, not %s", name, lorryspec.KindOf(v)))
		}
		return s, nil
	}
	var a HostAuth
	var err error
	if a.Username, err = get("username"); err != nil {
		return nil, err
	}
	if a.Password, err = get("password"); err != nil {
		return nil, err
	}
	if a.Username == "" || strings.Contains(a.Username, ":") {
		return nil, k.fail("auth", errors.New(`"username" must be non-empty and without ':'`))
	}
	return &a, nil
}
