package statedb

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// Roles of a token.
const (
	// RoleAdmin may do everything a person does: change the queue, stop
	// and remove jobs, read the configuration, list hosts.
	RoleAdmin = "admin"
	// RoleMinion may ask for jobs and report on them, under the minion
	// names its token's name allows (see Token.Claims).
	RoleMinion = "minion"
)

// tokenPrefix starts every token, so that one pasted where it should not
// be is easy to recognise and to search for.
const tokenPrefix = "lct_"

// NewSecret returns a new random secret of 32 bytes, printable, with the
// given prefix. Tokens, sessions and CSRF tokens are such secrets.
func NewSecret(prefix string) (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random secret: %w", err)
	}
	return prefix + base64.RawURLEncoding.EncodeToString(b), nil
}

// NewToken returns a new token to hand to its holder once. Only its hash
// is ever stored.
func NewToken() (string, error) { return NewSecret(tokenPrefix) }

// HashSecret is what the database keeps of a token or a session: finding
// a row by it compares the secret in constant time with respect to the
// secret, since a guess's hash says nothing about how close it came.
func HashSecret(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// Token is a stored token: never the token itself.
type Token struct {
	Name     string
	Role     string
	Created  int64
	LastUsed *int64
}

// Claims says whether a minion token named like t may act as the minion
// called name: its own name, or its name followed by "-" and anything,
// so that one token serves the minions HOST-1, HOST-2... of a machine.
func (t Token) Claims(name string) bool {
	return t.Role == RoleMinion && (name == t.Name || strings.HasPrefix(name, t.Name+"-"))
}

// ValidTokenName says why name cannot name a token, or nil. Names are
// shown in logs and pages and are minion names: letters, digits, ".",
// "_" and "-".
func ValidTokenName(name string) error {
	if name == "" || len(name) > 100 {
		return fmt.Errorf("token name %q: want 1 to 100 characters: %w", name, ErrInvalid)
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("token name %q: want letters, digits, '.', '_' and '-' only: %w", name, ErrInvalid)
		}
	}
	return nil
}

// CreateToken stores a new token by its hash. ErrConflict: the name is
// taken, or, for a minion token, one of the two names claims the other's
// minions (build and build-01), which would let one minion act as the
// other.
func (tx *Tx) CreateToken(ctx context.Context, name, role string, hash []byte) error {
	if err := ValidTokenName(name); err != nil {
		return err
	}
	if role != RoleAdmin && role != RoleMinion {
		return fmt.Errorf("role %q: want %s or %s: %w", role, RoleAdmin, RoleMinion, ErrInvalid)
	}
	if role == RoleMinion {
		var other string
		err := tx.queryRow(ctx, `SELECT name FROM tokens WHERE role = 'minion'
			AND (substr($1, 1, length(name) + 1) = name || '-' OR substr(name, 1, length($1) + 1) = $1 || '-')
			LIMIT 1`, name).Scan(&other)
		if err == nil {
			return fmt.Errorf("minion token %s would share minion names with minion token %s: %w", name, other, ErrConflict)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("create token %s: %w", name, err)
		}
	}
	res, err := tx.exec(ctx, `INSERT INTO tokens (name, role, hash, created) VALUES ($1, $2, $3, $4)
		ON CONFLICT (name) DO NOTHING`, name, role, hash, tx.Now)
	if err != nil {
		return fmt.Errorf("create token %s: %w", name, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("token %s exists; revoke it first: %w", name, ErrConflict)
	}
	return nil
}

// Tokens lists the tokens by name.
func (tx *Tx) Tokens(ctx context.Context) ([]Token, error) {
	rows, err := tx.query(ctx, `SELECT name, role, created, last_used FROM tokens ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	defer rows.Close()
	out := []Token{}
	for rows.Next() {
		var t Token
		var used sql.NullInt64
		if err := rows.Scan(&t.Name, &t.Role, &t.Created, &used); err != nil {
			return nil, fmt.Errorf("list tokens: %w", err)
		}
		t.LastUsed = nullInt(used)
		out = append(out, t)
	}
	return out, rows.Err()
}

// HasAdminToken says whether anyone can administer the controller.
func (tx *Tx) HasAdminToken(ctx context.Context) (bool, error) {
	var n int
	if err := tx.queryRow(ctx, `SELECT COUNT(*) FROM tokens WHERE role = 'admin'`).Scan(&n); err != nil {
		return false, fmt.Errorf("count admin tokens: %w", err)
	}
	return n > 0, nil
}

// RevokeToken forgets the token called name, and ends the browser
// sessions signed in with it. ErrNotFound if there is none.
func (tx *Tx) RevokeToken(ctx context.Context, name string) error {
	res, err := tx.exec(ctx, `DELETE FROM tokens WHERE name = $1`, name)
	if err != nil {
		return fmt.Errorf("revoke token %s: %w", name, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("no token %s: %w", name, ErrNotFound)
	}
	return nil
}

// TokenByHash finds the token whose hash is hash. ErrNotFound if none.
func (tx *Tx) TokenByHash(ctx context.Context, hash []byte) (Token, error) {
	var t Token
	var used sql.NullInt64
	err := tx.queryRow(ctx, `SELECT name, role, created, last_used FROM tokens WHERE hash = $1`, hash).
		Scan(&t.Name, &t.Role, &t.Created, &used)
	if errors.Is(err, sql.ErrNoRows) {
		return t, fmt.Errorf("no such token: %w", ErrNotFound)
	}
	if err != nil {
		return t, fmt.Errorf("find token: %w", err)
	}
	t.LastUsed = nullInt(used)
	return t, nil
}

// TokenUsed records that the token called name was used now.
func (tx *Tx) TokenUsed(ctx context.Context, name string) error {
	if _, err := tx.exec(ctx, `UPDATE tokens SET last_used = $1 WHERE name = $2`, tx.Now, name); err != nil {
		return fmt.Errorf("record use of token %s: %w", name, err)
	}
	return nil
}

// Session is a browser signed in with a token.
type Session struct {
	Token   Token
	CSRF    string // the secret every form of the session posts back
	Expires int64
}

// CreateSession starts a session for the token called name, found by the
// hash of its cookie until it expires at expires. Expired sessions are
// dropped on the way.
func (tx *Tx) CreateSession(ctx context.Context, hash []byte, name, csrf string, expires int64) error {
	if _, err := tx.exec(ctx, `DELETE FROM web_sessions WHERE expires <= $1`, tx.Now); err != nil {
		return fmt.Errorf("drop expired sessions: %w", err)
	}
	_, err := tx.exec(ctx, `INSERT INTO web_sessions (hash, token, csrf, created, expires) VALUES ($1, $2, $3, $4, $5)`,
		hash, name, csrf, tx.Now, expires)
	if err != nil {
		return fmt.Errorf("create session of %s: %w", name, err)
	}
	return nil
}

// SessionByHash finds the unexpired session whose cookie hashes to hash.
// ErrNotFound if none.
func (tx *Tx) SessionByHash(ctx context.Context, hash []byte) (Session, error) {
	var s Session
	var used sql.NullInt64
	err := tx.queryRow(ctx, `SELECT t.name, t.role, t.created, t.last_used, s.csrf, s.expires
		FROM web_sessions s JOIN tokens t ON t.name = s.token WHERE s.hash = $1 AND s.expires > $2`, hash, tx.Now).
		Scan(&s.Token.Name, &s.Token.Role, &s.Token.Created, &used, &s.CSRF, &s.Expires)
	if errors.Is(err, sql.ErrNoRows) {
		return s, fmt.Errorf("no such session: %w", ErrNotFound)
	}
	if err != nil {
		return s, fmt.Errorf("find session: %w", err)
	}
	s.Token.LastUsed = nullInt(used)
	return s, nil
}

// EndSession forgets the session whose cookie hashes to hash, if any.
func (tx *Tx) EndSession(ctx context.Context, hash []byte) error {
	if _, err := tx.exec(ctx, `DELETE FROM web_sessions WHERE hash = $1`, hash); err != nil {
		return fmt.Errorf("end session: %w", err)
	}
	return nil
}
