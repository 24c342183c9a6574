package control

import (
	"context"

	"lorrycontroller.dev/lc/statedb"
)

// The tokens and the browsers' sessions that the routes ask who calls.

// TokenBySecret reads the token whose secret is secret. ErrNotFound: none
// is, or it was revoked.
func (a *App) TokenBySecret(ctx context.Context, secret string) (statedb.Token, error) {
	return read(ctx, a, func(tx *statedb.Tx) (statedb.Token, error) {
		return tx.TokenByHash(ctx, statedb.HashSecret(secret))
	})
}

// SessionByCookie reads the live session whose cookie is cookie.
// ErrNotFound: signed out, expired or revoked.
func (a *App) SessionByCookie(ctx context.Context, cookie string) (statedb.Session, error) {
	return read(ctx, a, func(tx *statedb.Tx) (statedb.Session, error) {
		return tx.SessionByHash(ctx, statedb.HashSecret(cookie))
	})
}

// TokenUsed records that the token named was used now.
func (a *App) TokenUsed(ctx context.Context, name string) error {
	return a.DB.Update(ctx, func(tx *statedb.Tx) error { return tx.TokenUsed(ctx, name) })
}

// NewSession is a session to start: its cookie, the token it signs in
// with, its CSRF token and how many seconds it lasts.
type NewSession struct {
	Cookie, Token, CSRF string
	Lifetime            int64
}

// StartSession starts the session s.
func (a *App) StartSession(ctx context.Context, s NewSession) error {
	return a.DB.Update(ctx, func(tx *statedb.Tx) error {
		return tx.CreateSession(ctx, statedb.HashSecret(s.Cookie), s.Token, s.CSRF, tx.Now+s.Lifetime)
	})
}

// EndSession ends the session whose cookie is cookie for good.
func (a *App) EndSession(ctx context.Context, cookie string) error {
	return a.DB.Update(ctx, func(tx *statedb.Tx) error { return tx.EndSession(ctx, statedb.HashSecret(cookie)) })
}
