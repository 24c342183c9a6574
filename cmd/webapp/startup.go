package main

import (
	"context"
	"log/slog"

	"lorrycontroller.dev/lc/clock"
	"lorrycontroller.dev/lc/control"
	"lorrycontroller.dev/lc/statedb"
	"lorrycontroller.dev/lc/webappconf"
)

// openStateDB opens the state database, says what the operator should
// know about its tokens, and sets the fake clock, if any, to the time the
// database pretends it is.
func openStateDB(ctx context.Context, cfg webappconf.Config, clk clock.Clock, fake *clock.Fake, log *slog.Logger) (*statedb.DB, error) {
	opts, err := cfg.StateDBOptions(clk, fake == nil, log)
	if err != nil {
		return nil, err
	}
	db, err := statedb.Open(ctx, cfg.StateDB, opts)
	if err != nil {
		return nil, err
	}
	warnBackups(cfg, log)
	control.WarnClockOffset(db.ClockOffset(), log)
	if err := checkAuth(ctx, cfg, db, log); err != nil {
		db.Close()
		return nil, err
	}
	if fake != nil {
		err := db.View(ctx, func(tx *statedb.Tx) error {
			now, err := tx.FakeNow(ctx)
			fake.Set(now)
			return err
		})
		if err != nil {
			db.Close()
			return nil, err
		}
		log.Warn("fake clock in use", "now", fake.Now().Unix())
	}
	return db, nil
}

// warnBackups says at start that POST /1.0/backup will fail, rather than
// leaving the operator to learn it from the backup timer: a PostgreSQL
// STATEDB reached through a pooler, with no --backup-statedb.
func warnBackups(cfg webappconf.Config, log *slog.Logger) {
	if cfg.BackupDirectory == "" {
		return
	}
	if err := statedb.CheckBackups(cfg.StateDB, cfg.BackupStateDB); err != nil {
		log.Warn("backups will fail", "err", err)
	}
}
