package statedb

import (
	"errors"
	"net/url"
	"regexp"
	"strings"
)

// A PostgreSQL address is written in either of libpq's forms: a URI
// (postgres://USER@HOST/DB?PARAM=VALUE, or postgresql://; a scheme is
// the same in any case) or keywords (host=HOST dbname=DB, values quoted
// with ' where they hold a space). Its secrets (a password, an SSL key's
// password, any parameter named for a password or a secret) are read
// from the --config file or elsewhere, never from a command line, and
// never shown: HoldsSecret and Redact read an address as loosely as any
// reader of it might, so that a secret written in a form that no parser
// takes as such is still one.

// pgSchemes are the schemes of the URI form.
var pgSchemes = []string{"postgresql://", "postgres://"}

// pgKeywordStart is how the keyword form begins: a keyword and "=". A
// SQLite file whose name begins so is named ./NAME.
var pgKeywordStart = regexp.MustCompile(`^[ \t\n\r\f\v]*[A-Za-z_][A-Za-z0-9_]*[ \t\n\r\f\v]*=`)

// IsPostgres says whether place names a PostgreSQL database, in either
// form, rather than a SQLite file.
func IsPostgres(place string) bool {
	return pgSchemeLen(place) > 0 || pgKeywordStart.MatchString(place)
}

// pgSchemeLen is the length of place's scheme and "://", 0 when place is
// no PostgreSQL URI.
func pgSchemeLen(place string) int {
	for _, s := range pgSchemes {
		if len(place) >= len(s) && strings.EqualFold(place[:len(s)], s) {
			return len(s)
		}
	}
	return 0
}

// pgConnString is place as pgx and libpq read it: they know the
// schemes in lower case only.
func pgConnString(place string) string {
	if n := pgSchemeLen(place); n > 0 {
		return strings.ToLower(place[:n]) + place[n:]
	}
	return place
}

// secretParam says whether a connection parameter is a secret:
// password, sslpassword and any other named for one, in any case.
func secretParam(key string) bool {
	k := strings.ToLower(key)
	return strings.Contains(k, "password") || strings.Contains(k, "secret")
}

// HoldsSecret says whether place, a PostgreSQL address, holds a secret:
// a password in the user part of a URI (any ":" before its last "@"), or
// a parameter that secretParam names, percent-encoded or not, anywhere
// after the scheme. Such an address must not be given on a command line,
// which every user of the machine can read. A literal "@" in a URI's
// parameter is written %40.
func HoldsSecret(place string) bool {
	if n := pgSchemeLen(place); n > 0 {
		rest := place[n:]
		if at := strings.LastIndex(rest, "@"); at >= 0 && strings.Contains(rest[:at], ":") {
			return true
		}
		return uriSecretStart(rest) < len(rest)
	}
	if !IsPostgres(place) {
		return false
	}
	pairs, err := pgKeywordPairs(place)
	for _, p := range pairs {
		if secretParam(p.key) {
			return true
		}
	}
	// What does not parse may still be read by someone as a secret.
	return err != nil && secretParam(place)
}

// uriSecretStart is where the first secret parameter of rest, a URI
// after its scheme, begins, len(rest) if it has none. Any "?", "&", ";"
// or "#" may begin a parameter here, wherever it is: a password written
// unencoded may hold them, and where its parameters begin is then
// anyone's guess.
func uriSecretStart(rest string) int {
	start := 0
	for i := 0; i <= len(rest); i++ {
		if i < len(rest) && !strings.ContainsRune("?&;#", rune(rest[i])) {
			continue
		}
		if k, _, ok := strings.Cut(rest[start:i], "="); ok && secretParam(pgUnescape(k)) {
			return start
		}
		start = i + 1
	}
	return len(rest)
}

// pgUnescape is s percent-decoded, as libpq and pgx decode a URI's
// parameters; s as it is where it does not decode.
func pgUnescape(s string) string {
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return s
}

// Redact is place with its secrets left out: of a URI, its user
// part's password and everything from its first secret parameter on (see
// redactURI); of the keyword form, the values of its secret parameters,
// and all from where it stops parsing. Anything else is a SQLite file's
// name, shown as it is.
func Redact(place string) string {
	if n := pgSchemeLen(place); n > 0 {
		return redactURI(strings.ToLower(place[:n]), place[n:])
	}
	if !IsPostgres(place) {
		return place
	}
	pairs, err := pgKeywordPairs(place)
	var shown []string
	for _, p := range pairs {
		if secretParam(p.key) {
			shown = append(shown, p.key+"=xxxxx")
		} else {
			shown = append(shown, p.key+"="+pgQuote(p.value))
		}
	}
	if err != nil {
		shown = append(shown, "…")
	}
	return strings.Join(shown, " ")
}

// redactURI is Redact of a URI: scheme, and rest after it. What is
// hidden is what any reading of rest could take as a secret: all after
// the user of a user part with a ":" (up to the last "@"), and all from
// the first secret parameter on.
func redactURI(scheme, rest string) string {
	end := uriSecretStart(rest)
	shown := rest[:end]
	if at := strings.LastIndex(rest, "@"); at >= 0 && strings.Contains(rest[:at], ":") {
		user := rest[:min(strings.IndexAny(rest, ":/?#"), end)]
		shown = user + ":xxxxx@"
		if at+1 < end {
			shown += rest[at+1 : end]
		}
	}
	if end < len(rest) {
		k, _, _ := strings.Cut(rest[end:], "=")
		shown += k + "=xxxxx"
	}
	return scheme + shown
}

// pgPair is a parameter of the keyword form.
type pgPair struct{ key, value string }

var errPgKeywords = errors.New("not PostgreSQL's keyword=value form")

// pgKeywordPairs parses the keyword form as libpq does: keyword, "=", and a
// value, unquoted up to white space or quoted with ', a backslash taking
// the next character as it is in either. It returns the pairs up to
// where it fails.
func pgKeywordPairs(s string) ([]pgPair, error) {
	var pairs []pgPair
	isSpace := func(c byte) bool { return strings.IndexByte(" \t\n\r\f\v", c) >= 0 }
	i := 0
	skip := func() {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
	}
	for {
		skip()
		if i == len(s) {
			return pairs, nil
		}
		start := i
		for i < len(s) && !isSpace(s[i]) && s[i] != '=' {
			i++
		}
		key := s[start:i]
		skip()
		if key == "" || i == len(s) || s[i] != '=' {
			return pairs, errPgKeywords
		}
		i++
		skip()
		var v strings.Builder
		if i < len(s) && s[i] == '\'' {
			i++
			for {
				if i == len(s) {
					return pairs, errPgKeywords
				}
				c := s[i]
				i++
				if c == '\'' {
					break
				}
				if c == '\\' && i < len(s) {
					c = s[i]
					i++
				}
				v.WriteByte(c)
			}
		} else {
			for i < len(s) && !isSpace(s[i]) {
				c := s[i]
				i++
				if c == '\\' && i < len(s) {
					c = s[i]
					i++
				}
				v.WriteByte(c)
			}
		}
		pairs = append(pairs, pgPair{key, v.String()})
	}
}

// pgQuote is v as a value of the keyword form.
func pgQuote(v string) string {
	if v != "" && !strings.ContainsAny(v, " \t\n\r\f\v'\\") {
		return v
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

// CheckBackupAddress fails unless addr, the address of the PostgreSQL
// STATEDB on its server itself for pg_dump (Options.BackupAddress), is a
// PostgreSQL address.
func CheckBackupAddress(addr string) error {
	if !IsPostgres(addr) {
		return errors.New("want the postgres:// URL of the PostgreSQL STATEDB on its server itself")
	}
	return nil
}

// CheckCopySource fails unless path, the database CopyToPostgres copies
// from, names a SQLite file.
func CheckCopySource(path string) error {
	if IsPostgres(path) {
		return errors.New("want the path of a SQLite file")
	}
	return nil
}

// CheckCopyTarget fails unless addr, the database CopyToPostgres copies
// into, is a PostgreSQL address.
func CheckCopyTarget(addr string) error {
	if !IsPostgres(addr) {
		return errors.New("want a postgres:// address")
	}
	return nil
}
