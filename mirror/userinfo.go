package mirror

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"lorrycontroller.dev/lc/redact"
)

// Every place that hands an upstream's or a downstream's address to a
// program splits its credentials off with splitURL (or, for a CVS root,
// parseCvsRoot) first: the program is given the address without them, and
// the credentials another way (environment, a prompt answered by a
// program, a file outside the working area that only lorry's user can
// read). Command lines are readable by every user of the machine.

// urlParts is a URL, scheme://[user[:password]@]host[:port][path], with
// its user information split off.
type urlParts struct {
	scheme string // as written
	// rawUser is the user as written, to give it back to a program
	// that takes the user in the URL (ssh's).
	rawUser        string
	user, password string
	hasUser        bool
	hasPassword    bool
	hostPort       string // as written
	rest           string // path, query and fragment, as written
}

// errNoURL says that an address is not of the form scheme://...
var errNoURL = errors.New("not a URL")

// splitURL splits the user information off rawURL, read as redact reads
// it and as the converters' URL parsers do: the authority ends at the
// first "/", "?" or "#" after "://", and its last "@" ends the user
// information, whatever the password holds; the user ends at the first
// ":". Both are percent-decoded: a user or password holding "/", "?", "#"
// or "%" (or, in the user, ":") is written percent-encoded, and any other
// character may be written as it is. A "%" that starts no escape stays as
// it is. It fails with errNoURL unless rawURL is scheme://..., and when
// the port is not a number, which is what a password holding a "/", "?"
// or "#" written as it is leaves.
func splitURL(rawURL string) (urlParts, error) {
	n := schemeLen(rawURL)
	after, ok := strings.CutPrefix(rawURL[n:], "://")
	if n == 0 || !ok {
		return urlParts{}, errNoURL
	}
	u := urlParts{scheme: rawURL[:n]}
	end := len(after)
	if i := strings.IndexAny(after, "/?#"); i >= 0 {
		end = i
	}
	authority := after[:end]
	u.rest = after[end:]
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		info := authority[:at]
		authority = authority[at+1:]
		user, pass, hasPass := strings.Cut(info, ":")
		u.rawUser, u.hasUser = user, true
		u.user = percentDecode(user)
		if hasPass {
			u.password, u.hasPassword = percentDecode(pass), true
		}
	}
	u.hostPort = authority
	port := authority
	if strings.HasPrefix(authority, "[") {
		if i := strings.IndexByte(authority, ']'); i >= 0 {
			port = authority[i+1:]
		}
	}
	if i := strings.LastIndexByte(port, ':'); i >= 0 {
		port = port[i+1:]
		if strings.Trim(port, "0123456789") != "" {
			return urlParts{}, fmt.Errorf("URL %q has a port that is not a number; a user or password holding \"/\", \"?\" or \"#\" is written percent-encoded (%%2F, %%3F, %%23)",
				redact.URLs(rawURL))
		}
	}
	if u.hasUser && strings.ContainsAny(u.user+u.password, "\x00\r\n") {
		return urlParts{}, fmt.Errorf("URL %q has a line break or NUL in its user or password", redact.URLs(rawURL))
	}
	if strings.Contains(u.user, ":") {
		// HTTP's Basic authentication, Subversion's and CVS's password
		// files end the user at its first ":".
		return urlParts{}, fmt.Errorf("URL %q has a user holding \":\", which no protocol lorry speaks can send", redact.URLs(rawURL))
	}
	return u, nil
}

// plain is the URL without its user information; keepUser keeps the user
// (without the password), as written.
func (u urlParts) plain(keepUser bool) string {
	s := u.scheme + "://"
	if keepUser && u.hasUser {
		s += u.rawUser + "@"
	}
	return s + u.hostPort + u.rest
}

// hostname is the host without the port and the brackets of an IPv6
// address.
func (u urlParts) hostname() string {
	h := u.hostPort
	if strings.HasPrefix(h, "[") {
		if i := strings.IndexByte(h, ']'); i >= 0 {
			return h[1:i]
		}
	}
	if i := strings.LastIndexByte(h, ':'); i >= 0 {
		return h[:i]
	}
	return h
}

// port is the port of the URL, "" when it names none.
func (u urlParts) port() string {
	h := u.hostPort
	if i := strings.IndexByte(h, ']'); i >= 0 && strings.HasPrefix(h, "[") {
		h = h[i+1:]
	}
	if i := strings.LastIndexByte(h, ':'); i >= 0 {
		return h[i+1:]
	}
	return ""
}

// percentDecode decodes the %XX escapes of s, leaving a "%" that starts
// none as it is.
func percentDecode(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
			continue
		}
		b = append(b, s[i])
	}
	return string(b)
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// privateDir makes a directory that only lorry's user can read, outside
// the working area, for the files that hand credentials to a converter
// during one run; the caller removes it. A crash leaves it in the
// machine's temporary directory, not among the files of the mirror.
func privateDir(kind string) (string, error) {
	return os.MkdirTemp("", "lorry-"+kind+"-")
}

// withoutUserinfo is rawURL without its user information, or rawURL when
// it is no URL or splitURL refuses it.
func withoutUserinfo(rawURL string) string {
	if u, err := splitURL(rawURL); err == nil {
		return u.plain(false)
	}
	return rawURL
}
