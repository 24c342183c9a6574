package statedb

import (
	"context"
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"lorrycontroller.dev/lc/statedb/dbtest"
)

// pgAddrChars are the characters a user and a password are drawn from:
// every printable ASCII one and a few others.
func pgAddrChars() []string {
	var cs []string
	for c := ' '; c <= '~'; c++ {
		cs = append(cs, string(c))
	}
	return append(cs, "é", "€", "\u00a0", "日")
}

// percentAll is s with every byte percent-encoded.
func percentAll(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, "%%%02X", s[i])
	}
	return b.String()
}

// pgSecretForm is a PostgreSQL address holding a secret.
type pgSecretForm struct {
	name, addr string
	// password, when not "", is the password that pgx must read from
	// addr: the form is one that libpq and pgx accept.
	password string
}

// pgSecretForms are the ways of writing a secret, pass, into an address,
// with a user user: in a URI's user part, unencoded, encoded as Go does
// and wholly percent-encoded; as a URI's parameter under each secret
// name, in any case, its name percent-encoded or not, its value encoded or
// not, first or after others; and as a parameter of the keyword form,
// quoted, with space about its "=" or not. Every scheme in every case.
func pgSecretForms(user, pass string) []pgSecretForm {
	var forms []pgSecretForm
	const hostPath = "db.example.org:5432/lorry"
	for _, scheme := range []string{"postgres://", "postgresql://", "POSTGRES://", "PostgreSQL://", "postgreSQL://"} {
		forms = append(forms,
			pgSecretForm{name: scheme + " user part unencoded", addr: scheme + user + ":" + pass + "@" + hostPath + "?sslmode=require"},
			pgSecretForm{name: scheme + " user part encoded", addr: scheme + url.UserPassword(user, pass).String() + "@" + hostPath + "?sslmode=require", password: pass},
			pgSecretForm{name: scheme + " user part all encoded", addr: scheme + percentAll(user) + ":" + percentAll(pass) + "@" + hostPath, password: pass},
		)
		for _, key := range []string{"password", "sslpassword", "PASSWORD", "SslPassword", "pass%77ord", "%70assword", "ssl%70ass%77ord", "oauth_client_secret"} {
			for _, value := range []struct{ how, v string }{{"unencoded", pass}, {"encoded", strings.ReplaceAll(url.QueryEscape(pass), "+", "%20")}, {"all encoded", percentAll(pass)}} {
				first := pgSecretForm{name: scheme + " " + key + " first, " + value.how,
					addr: scheme + hostPath + "?" + key + "=" + value.v + "&sslmode=require"}
				later := pgSecretForm{name: scheme + " " + key + " later, " + value.how,
					addr: scheme + url.User(user).String() + "@" + hostPath + "?sslmode=require&" + key + "=" + value.v}
				if (key == "password" || key == "pass%77ord" || key == "%70assword") && value.how != "unencoded" {
					first.password, later.password = pass, pass
				}
				forms = append(forms, first, later)
			}
		}
	}
	for _, key := range []string{"password", "sslpassword", "PASSWORD", "oauth_client_secret"} {
		for _, eq := range []string{"=", " = ", "\t=\n"} {
			f := pgSecretForm{name: "keywords " + key + " " + fmt.Sprintf("%q", eq),
				addr: "host=db.example.org user=" + pgQuote(user) + " " + key + eq + pgQuote(pass) + " dbname=lorry"}
			if key == "password" {
				f.password = pass
			}
			forms = append(forms, f,
				pgSecretForm{name: f.name + " first", addr: " " + key + eq + pgQuote(pass) + " host=db.example.org", password: f.password})
		}
	}
	return forms
}

// TestPostgresSecretForms: every form of a PostgreSQL address that holds
// a secret, whatever characters its user and password hold, is taken for
// PostgreSQL, found to hold a secret, and shown without it.
func TestPostgresSecretForms(t *testing.T) {
	for _, c := range pgAddrChars() {
		user, pass := "us"+c+"er", "SEK"+c+"RIT"
		for _, f := range pgSecretForms(user, pass) {
			if !IsPostgres(f.addr) {
				t.Errorf("%s, %q: IsPostgres(%q) = false; want true", f.name, c, f.addr)
			}
			if !HoldsSecret(f.addr) {
				t.Errorf("%s, %q: HoldsSecret(%q) = false; want true", f.name, c, f.addr)
			}
			if shown := Redact(f.addr); strings.Contains(shown, "SEK") || strings.Contains(shown, "RIT") {
				t.Errorf("%s, %q: Redact(%q) = %q; want no part of the password", f.name, c, f.addr, shown)
			}
			if f.password != "" {
				cfg, err := pgconn.ParseConfig(pgConnString(f.addr))
				if err != nil {
					t.Errorf("%s, %q: pgx does not parse %q: %v", f.name, c, f.addr, err)
				} else if cfg.Password != pass && cfg.RuntimeParams["password"] != pass {
					t.Errorf("%s, %q: pgx reads the password of %q as %q; want %q", f.name, c, f.addr, cfg.Password, pass)
				}
			}
		}
	}
}

// TestPostgresAddresses: what is PostgreSQL's and what a SQLite file's,
// and that an address without a secret is shown whole.
func TestPostgresAddresses(t *testing.T) {
	for _, tc := range []struct {
		place string
		pg    bool
		shown string
	}{
		{"lorry-controller.db", false, "lorry-controller.db"},
		{"/var/lib/lorry-controller/statedb.sqlite", false, "/var/lib/lorry-controller/statedb.sqlite"},
		{"./host=x.db", false, "./host=x.db"},
		{"state db.sqlite", false, "state db.sqlite"},
		{"postgres.db", false, "postgres.db"},
		{"postgres:x.db", false, "postgres:x.db"},
		{"postgres://lc@db.example.org/lorry?sslmode=require", true, "postgres://lc@db.example.org/lorry?sslmode=require"},
		{"POSTGRES://lc@db.example.org/lorry", true, "postgres://lc@db.example.org/lorry"},
		{"postgresql:///lorry?host=%2Frun%2Fpostgresql", true, "postgresql:///lorry?host=%2Frun%2Fpostgresql"},
		{"postgres://db/password_db?user=a%40b", true, "postgres://db/password_db?user=a%40b"},
		{"host=/run/postgresql dbname=lorry user=lc", true, "host=/run/postgresql dbname=lorry user=lc"},
		{"  host = db  application_name='lorry controller'", true, "host=db application_name='lorry controller'"},
	} {
		if got := IsPostgres(tc.place); got != tc.pg {
			t.Errorf("IsPostgres(%q) = %v; want %v", tc.place, got, tc.pg)
		}
		if HoldsSecret(tc.place) {
			t.Errorf("HoldsSecret(%q) = true; want false", tc.place)
		}
		if got := Redact(tc.place); got != tc.shown {
			t.Errorf("Redact(%q) = %q; want %q", tc.place, got, tc.shown)
		}
	}
}

// TestOpenPostgresForms opens a PostgreSQL STATEDB that asks for a
// password by addresses in the other forms, the password in each:
// upper-case schemes and the keyword form. Each opens, is shown without
// its password, and backs up.
func TestOpenPostgresForms(t *testing.T) {
	addr, password := dbtest.PasswordDatabase(t)
	u, err := url.Parse(addr)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	kw := []string{"user=" + pgQuote(u.User.Username()), "password=" + pgQuote(password), "dbname=" + pgQuote(path.Base(u.Path))}
	if h := u.Hostname(); h != "" {
		kw = append(kw, "host="+pgQuote(h))
	}
	if p := u.Port(); p != "" {
		kw = append(kw, "port="+p)
	}
	for k := range q {
		kw = append(kw, k+"="+pgQuote(q.Get(k)))
	}
	withPassword := *u
	withPassword.User = url.UserPassword(u.User.Username(), password)
	upper := "POSTGRESQL" + strings.TrimPrefix(withPassword.String(), withPassword.Scheme)
	ctx := context.Background()
	for i, place := range []string{upper, strings.Join(kw, " ")} {
		db, err := Open(ctx, place, Options{})
		if err != nil {
			t.Fatalf("open %s: %v", Redact(place), err)
		}
		if !onPostgres(db) || strings.Contains(db.Path(), password) {
			t.Errorf("open %s: PostgreSQL %v, shown as %q; want PostgreSQL, shown without the password", Redact(place), onPostgres(db), db.Path())
		}
		file := filepath.Join(t.TempDir(), fmt.Sprintf("backup-%d", i))
		if _, err := BackupPostgres(ctx, place, "", file, 1); err != nil {
			t.Errorf("back up %s: %v", Redact(place), err)
		}
		db.Close()
	}
}
