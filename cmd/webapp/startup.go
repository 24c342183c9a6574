package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"lorrycontroller.dev/lc/clock"
	"lorrycontroller.dev/lc/secretfile"
	"lorrycontroller.dev/lc/statedb"
)

// readSecrets reads the notifications' secret, if there is a
// notification URL, and the push hooks' secret, if there is a file of it.
func readSecrets(cfg Config, log *slog.Logger) (notify, hook string, err error) {
	if cfg.NotifyURL != "" {
		var warning string
		if notify, warning, err = secretfile.Read(cfg.NotifySecretFile); err != nil {
			return "", "", fmt.Errorf("--notify-secret-file: %w", err)
		}
		if warning != "" {
			log.Warn("notification secret", "warning", warning)
		}
	}
	if cfg.HookSecretFile != "" {
		var warning string
		if hook, warning, err = secretfile.Read(cfg.HookSecretFile); err != nil {
			return "", "", fmt.Errorf("--hook-secret-file: %w", err)
		}
		if warning != "" {
			log.Warn("push hook secret", "warning", warning)
		}
	}
	return notify, hook, nil
}

// openStateDB opens the state database, says what the operator should
// know about its tokens, and sets the fake clock, if any, to the time the
// database pretends it is.
func openStateDB(ctx context.Context, cfg Config, clk clock.Clock, fake *clock.Fake, log *slog.Logger) (*statedb.DB, error) {
	opts := statedb.Options{Clock: clk, OutputLimit: cfg.OutputLimit, Notify: cfg.NotifyEvents,
		ApplicationName: strings.TrimSuffix("lorry-controller-webapp "+cfg.ReplicaName, " "), BackupAddress: cfg.BackupStateDB,
		// The times of the leases, the jobs and the claims are those of
		// the STATEDB's server, which every WEBAPP sharing it reads
		// alike; the debug clock is the one pretend-time moves.
		ServerClock: fake == nil,
		// A WEBAPP stopped inside a transaction keeps the others from
		// writing for one lease's term at most.
		StuckTransaction: cfg.ReplicaLease}
	if cfg.StateDBPasswordFile != "" {
		password, warning, err := secretfile.Read(cfg.StateDBPasswordFile)
		if err != nil {
			return nil, fmt.Errorf("--statedb-password-file: %w", err)
		}
		if warning != "" {
			log.Warn(warning)
		}
		opts.Password = password
	}
	db, err := statedb.Open(ctx, cfg.StateDB, opts)
	if err != nil {
		return nil, err
	}
	warnBackups(cfg, log)
	warnClockOffset(db.ClockOffset(), log)
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
func warnBackups(cfg Config, log *slog.Logger) {
	if cfg.BackupDirectory == "" {
		return
	}
	if err := statedb.CheckBackups(cfg.StateDB, cfg.BackupStateDB); err != nil {
		log.Warn("backups will fail", "err", err)
	}
}
