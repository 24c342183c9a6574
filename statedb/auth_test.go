package statedb

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestTokens(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	secret, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	if len(secret) < 43 {
		t.Fatalf("token %d characters long; want 32 random bytes at least", len(secret))
	}
	f.update(t, func(tx *Tx) error {
		has, err := tx.HasAdminToken(ctx)
		if err != nil || has {
			t.Errorf("fresh database: HasAdminToken = %v, %v; want false", has, err)
		}
		return tx.CreateToken(ctx, "root", RoleAdmin, HashSecret(secret))
	})
	f.update(t, func(tx *Tx) error { return tx.CreateToken(ctx, "build-01", RoleMinion, HashSecret("m1")) })
	for _, tc := range []struct {
		name, token, role string
		want              error
	}{
		{name: "taken name", token: "root", role: RoleMinion, want: ErrConflict},
		{name: "minion name under another's", token: "build-01-x", role: RoleMinion, want: ErrConflict},
		{name: "minion name over another's", token: "build", role: RoleMinion, want: ErrConflict},
		{name: "bad role", token: "x", role: "reader", want: ErrInvalid},
		{name: "bad name", token: "a b", role: RoleAdmin, want: ErrInvalid},
		{name: "empty name", token: "", role: RoleAdmin, want: ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := f.db.Update(ctx, func(tx *Tx) error { return tx.CreateToken(ctx, tc.token, tc.role, HashSecret(tc.name)) })
			if !errors.Is(err, tc.want) {
				t.Fatalf("CreateToken(%q, %q) = %v; want %v", tc.token, tc.role, err, tc.want)
			}
		})
	}
	// A minion token whose name only starts like another's is fine.
	f.update(t, func(tx *Tx) error { return tx.CreateToken(ctx, "build-010", RoleMinion, HashSecret("m2")) })

	f.clock.Set(2000)
	f.update(t, func(tx *Tx) error {
		tok, err := tx.TokenByHash(ctx, HashSecret(secret))
		if err != nil || tok.Name != "root" || tok.Role != RoleAdmin || tok.Created != 1000 || tok.LastUsed != nil {
			t.Errorf("TokenByHash = %+v, %v; want root, admin, created 1000, never used", tok, err)
		}
		if _, err := tx.TokenByHash(ctx, HashSecret(secret+"x")); !errors.Is(err, ErrNotFound) {
			t.Errorf("TokenByHash of another secret = %v; want ErrNotFound", err)
		}
		return tx.TokenUsed(ctx, "root")
	})
	f.update(t, func(tx *Tx) error {
		toks, err := tx.Tokens(ctx)
		if err != nil || len(toks) != 3 || toks[2].Name != "root" || toks[2].LastUsed == nil || *toks[2].LastUsed != 2000 {
			t.Errorf("Tokens = %+v, %v; want three, root last used at 2000", toks, err)
		}
		has, err := tx.HasAdminToken(ctx)
		if err != nil || !has {
			t.Errorf("HasAdminToken = %v, %v; want true", has, err)
		}
		return nil
	})

	// A session lives until it expires, it is signed out, or its token is
	// revoked.
	f.update(t, func(tx *Tx) error {
		if err := tx.CreateSession(ctx, HashSecret("s1"), "root", "c1", 3000); err != nil {
			return err
		}
		return tx.CreateSession(ctx, HashSecret("s2"), "root", "c2", 9000)
	})
	session := func(s string) (Session, error) {
		var got Session
		err := f.db.View(ctx, func(tx *Tx) error {
			var err error
			got, err = tx.SessionByHash(ctx, HashSecret(s))
			return err
		})
		return got, err
	}
	if s, err := session("s1"); err != nil || s.Token.Name != "root" || s.Token.Role != RoleAdmin || s.CSRF != "c1" {
		t.Errorf("session s1 = %+v, %v; want root's, csrf c1", s, err)
	}
	f.clock.Set(3000)
	if _, err := session("s1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("expired session s1: %v; want ErrNotFound", err)
	}
	f.update(t, func(tx *Tx) error { return tx.EndSession(ctx, HashSecret("s2")) })
	if _, err := session("s2"); !errors.Is(err, ErrNotFound) {
		t.Errorf("ended session s2: %v; want ErrNotFound", err)
	}
	f.update(t, func(tx *Tx) error { return tx.CreateSession(ctx, HashSecret("s3"), "root", "c3", 9000) })
	f.update(t, func(tx *Tx) error { return tx.RevokeToken(ctx, "root") })
	if _, err := session("s3"); !errors.Is(err, ErrNotFound) {
		t.Errorf("session of a revoked token: %v; want ErrNotFound", err)
	}
	err = f.db.Update(ctx, func(tx *Tx) error {
		if _, err := tx.TokenByHash(ctx, HashSecret(secret)); !errors.Is(err, ErrNotFound) {
			t.Errorf("revoked token still found: %v", err)
		}
		return tx.RevokeToken(ctx, "root")
	})
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("revoking twice: %v; want ErrNotFound", err)
	}
}

func TestClaims(t *testing.T) {
	m := Token{Name: "build-01", Role: RoleMinion}
	for name, want := range map[string]bool{
		"build-01": true, "build-01-1": true, "build-01-x-2": true,
		"build-010": false, "build-0": false, "build": false, "other": false, "": false,
	} {
		if got := m.Claims(name); got != want {
			t.Errorf("minion token build-01 claims %q: %v; want %v", name, got, want)
		}
	}
	if (Token{Name: "build-01", Role: RoleAdmin}).Claims("build-01") {
		t.Errorf("an admin token claims a minion name")
	}
}

// TestDatabaseFilesPrivate opens a new database under a loose umask and
// under none, and checks that the database, its WAL and its shared memory
// are the service user's alone.
func TestDatabaseFilesPrivate(t *testing.T) {
	sqliteOnly(t)
	for _, umask := range []int{0o022, 0o000} {
		dir := t.TempDir()
		path := filepath.Join(dir, "state.db")
		old := syscall.Umask(umask)
		db, err := Open(context.Background(), path, Options{})
		if err == nil {
			// Write, so that the WAL and shared memory exist.
			err = db.Update(context.Background(), func(tx *Tx) error { return tx.SetRunningQueue(context.Background(), false) })
		}
		syscall.Umask(old)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"state.db", "state.db-wal", "state.db-shm"} {
			info, err := os.Stat(filepath.Join(dir, name))
			if err != nil {
				t.Fatalf("umask %03o: %v", umask, err)
			}
			if got := info.Mode().Perm(); got != 0o600 {
				t.Errorf("umask %03o: %s has mode %03o; want 600", umask, name, got)
			}
		}
		db.Close()
	}
}
