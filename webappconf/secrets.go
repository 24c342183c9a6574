package webappconf

import (
	"fmt"
	"log/slog"
	"strings"

	"lorrycontroller.dev/lc/clock"
	"lorrycontroller.dev/lc/secretfile"
	"lorrycontroller.dev/lc/statedb"
)

// ReadSecrets reads the notifications' secret, if there is a
// notification URL, and the push hooks' secret, if there is a file of it.
func (c *Config) ReadSecrets(log *slog.Logger) (notify, hook string, err error) {
	if c.NotifyURL != "" {
		var warning string
		if notify, warning, err = secretfile.Read(c.NotifySecretFile); err != nil {
			return "", "", fmt.Errorf("--notify-secret-file: %w", err)
		}
		if warning != "" {
			log.Warn("notification secret", "warning", warning)
		}
	}
	if c.HookSecretFile != "" {
		var warning string
		if hook, warning, err = secretfile.Read(c.HookSecretFile); err != nil {
			return "", "", fmt.Errorf("--hook-secret-file: %w", err)
		}
		if warning != "" {
			log.Warn("push hook secret", "warning", warning)
		}
	}
	return notify, hook, nil
}

// StateDBOptions are the options the WEBAPP opens its STATEDB with, on
// clock clk, or with serverClock the STATEDB server's, and with the
// password of --statedb-password-file, whose warning goes to log.
func (c *Config) StateDBOptions(clk clock.Clock, serverClock bool, log *slog.Logger) (statedb.Options, error) {
	opts := statedb.Options{Clock: clk, OutputLimit: c.OutputLimit, Notify: c.NotifyEvents,
		ApplicationName: strings.TrimSuffix("lorry-controller-webapp "+c.ReplicaName, " "), BackupAddress: c.BackupStateDB,
		// The times of the leases, the jobs and the claims are those of
		// the STATEDB's server, which every WEBAPP sharing it reads
		// alike; the debug clock is the one pretend-time moves.
		ServerClock: serverClock,
		// A WEBAPP stopped inside a transaction keeps the others from
		// writing for one lease's term at most.
		StuckTransaction: c.ReplicaLease}
	if c.StateDBPasswordFile != "" {
		password, warning, err := secretfile.Read(c.StateDBPasswordFile)
		if err != nil {
			return opts, fmt.Errorf("--statedb-password-file: %w", err)
		}
		if warning != "" {
			log.Warn(warning)
		}
		opts.Password = password
	}
	return opts, nil
}
