// Package webappconf is the WEBAPP's configuration: its flags, read from
// the command line and the --config file, and their checks, which the
// WEBAPP and its subcommands share.
package webappconf

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"lorrycontroller.dev/lc/control"
	"lorrycontroller.dev/lc/flagconf"
	"lorrycontroller.dev/lc/hosts/downstream"
	"lorrycontroller.dev/lc/journallog"
	"lorrycontroller.dev/lc/statedb"
)

// Values of --read-access and --metrics-access.
const (
	AccessAnonymous = "anonymous"
	AccessToken     = "token"
)

// Config is everything the WEBAPP is told on its command line or in its
// configuration file.
type Config struct {
	StateDB       string
	ConfigDir     string
	ConfgitURL    string
	ConfgitBranch string
	Listen        string
	AddrFile      string
	StatusHTML    string
	GhostTimeout  time.Duration
	Lease         time.Duration
	KillGrace     time.Duration
	ClaimTimeout  time.Duration
	JobMaxAge     time.Duration
	OutputLimit   int64
	DebugFakeTime bool
	// DebugPprofListen is where Go's profiles are served, "" for nowhere.
	DebugPprofListen string
	LogLevel         string
	Downstream       downstream.Config
	ShutdownGrace    time.Duration
	PeriodicWork     bool
	// ConfigFile is the --config file, "" for none.
	ConfigFile string
	// InsecureNoAuth, ReadAccess and MetricsAccess say who must show a
	// token; see routes.Server.
	InsecureNoAuth bool
	ReadAccess     string
	MetricsAccess  string
	// AdminTokenFile is for the call subcommand, which reads this
	// configuration too; the WEBAPP only checks who may read it.
	AdminTokenFile string
	// AllowLocalSources lets specs mirror files of the minions' machines.
	AllowLocalSources bool
	// NotifyURL is where notifications are posted, "" for nowhere;
	// NotifySecretFile holds the secret they are signed with, and
	// NotifyEvents the events to notify of (NotifyEventList parsed).
	NotifyURL        string
	NotifySecretFile string
	NotifyEventList  string
	NotifyEvents     map[string]bool
	// HookSecretFile holds the secret of the forges' push hooks; "" for
	// no push hooks.
	HookSecretFile string
	// PublicURL is where browsers and notification receivers reach the
	// WEBAPP, "" when not said; see checkPublicURL.
	PublicURL string
	// BackupDirectory is where POST /1.0/backup writes, "" for nowhere.
	BackupDirectory string

	// IdleTimeout, BodyReadTimeout, BodyMinRate and MaxConnections bound
	// what clients hold of the WEBAPP; see docs/operations.md.
	IdleTimeout     time.Duration
	BodyReadTimeout time.Duration
	BodyMinRate     int64
	MaxConnections  int
	// StateDBPasswordFile holds the password of a PostgreSQL STATEDB.
	StateDBPasswordFile string
	// BackupStateDB is the address at which pg_dump reaches a
	// PostgreSQL STATEDB on its server itself, when StateDB goes
	// through a pooler; "" for StateDB (statedb's DumpAddress).
	BackupStateDB string
	// ReplicaName, ReplicaURL and ReplicaLease say how this WEBAPP is
	// known to the others sharing its STATEDB, and the term of the
	// leases of the work one of them at a time does; ReplicaForget how
	// long one not heard from stays listed.
	ReplicaName   string
	ReplicaURL    string
	ReplicaLease  time.Duration
	ReplicaForget time.Duration
	// Warnings are about the configuration file, for the log.
	Warnings []string
}

// Parse reads the WEBAPP's flags from args and from the --config file
// they name, and checks them. The usage goes to stderr.
func Parse(args []string, stderr io.Writer) (Config, error) {
	var c Config
	fs := flag.NewFlagSet("lorry-controller-webapp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: lorry-controller-webapp [flags]\n"+
			"       lorry-controller-webapp call [flags] METHOD PATH [key=value...]\n"+
			"       lorry-controller-webapp token create|list|revoke [flags]\n"+
			"       lorry-controller-webapp check-config [flags] [DIR | --git-dir DIR --rev REV]\n"+
			"       lorry-controller-webapp backup [flags] FILE\n"+
			"       lorry-controller-webapp migrate-statedb --from PATH --to postgres://... [flags]\n\n"+
			"Serve the Lorry Controller /1.0 API and status page.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	c.register(fs)
	warnings, err := flagconf.ParseOriginal(fs, args, "config", flagconf.OriginalWebapp)
	c.Warnings = warnings
	if err != nil {
		return c, err
	}
	if err := checkStateDBOnCommandLine(args); err != nil {
		return c, err
	}
	return c, c.check()
}

// register adds the WEBAPP's flags to fs, each read into c.
func (c *Config) register(fs *flag.FlagSet) {
	fs.StringVar(&c.StateDB, "statedb", "lorry-controller.db", "`path` of the state database (SQLite), or the postgres:// URL of a PostgreSQL database, without its password")
	fs.StringVar(&c.StateDBPasswordFile, "statedb-password-file", "", "`file` of the PostgreSQL STATEDB's password (else libpq's PGPASSFILE or ~/.pgpass)")
	fs.StringVar(&c.BackupStateDB, "backup-statedb", "", "postgres:// `url` of the PostgreSQL STATEDB on its server itself, without its password, for pg_dump when --statedb goes through a pooler such as pgbouncer; empty: --statedb")
	fs.StringVar(&c.ReplicaName, "replica-name", "", "`name` of this WEBAPP among those sharing the STATEDB, on the status page; empty: the host's name and the listening port")
	fs.StringVar(&c.ReplicaURL, "replica-url", "", "`url` at which the other WEBAPPs and browsers reach this one; empty: http:// and the listening address")
	fs.DurationVar(&c.ReplicaLease, "replica-lease", control.DefaultLeaseTerm, "term of the leases of the work one WEBAPP at a time does (listings, ticks, reading CONFGIT), renewed every third of it")
	fs.DurationVar(&c.ReplicaForget, "replica-forget", control.DefaultReplicaForget, "forget a WEBAPP sharing the STATEDB not seen for this `duration`; one not seen for two --replica-lease is listed as down until then")
	fs.StringVar(&c.ConfigDir, "configuration-directory", "confgit", "`dir`ectory of the local CONFGIT clone")
	fs.StringVar(&c.ConfgitURL, "confgit-url", "", "`url` of CONFGIT to clone and fetch; empty: use the repository already in --configuration-directory")
	fs.StringVar(&c.ConfgitBranch, "confgit-branch", "master", "CONFGIT `branch` to read (falls back to the remote's HEAD if it does not exist)")
	fs.StringVar(&c.Listen, "listen", "127.0.0.1:12765", "`address` to listen on (\":0\" picks a free port)")
	fs.StringVar(&c.AddrFile, "addr-file", "", "write the bound address to this `file` once listening")
	fs.StringVar(&c.StatusHTML, "status-html", "", "`path` of the on-disk status page that status-html rewrites")
	fs.DurationVar(&c.GhostTimeout, "ghost-timeout", 15*time.Minute, "end running jobs with no update for this `duration` (remove-ghost-jobs)")
	fs.DurationVar(&c.Lease, "lease", 0, "a minion kills its job after this `duration` without delivering an update; 0: half of --ghost-timeout")
	fs.DurationVar(&c.KillGrace, "kill-grace", control.DefaultKillGrace, "longest `duration` a minion waits between SIGTERM and SIGKILL when killing a job")
	fs.DurationVar(&c.ClaimTimeout, "claim-timeout", control.DefaultClaimTimeout, "end as orphaned a job handed out whose minion has not confirmed starting it within this `duration`")
	fs.DurationVar(&c.JobMaxAge, "job-max-age", 30*24*time.Hour, "default age beyond which remove-old-jobs forgets finished jobs")
	fs.Int64Var(&c.OutputLimit, "job-output-limit", statedb.DefaultOutputLimit, "`bytes` of output kept per job (head and tail)")
	fs.BoolVar(&c.DebugFakeTime, "debug-fake-time", false, "use a fake clock that starts at 0 and moves only by POST /1.0/pretend-time")
	fs.StringVar(&c.DebugPprofListen, "debug-pprof-listen", "",
		"serve Go's profiles (/debug/pprof/) on this loopback `address`, apart from the API and without auth; empty: none")
	c.Downstream.RegisterFlags(fs)
	fs.StringVar(&c.LogLevel, "log-level", "info", "log `level`: "+journallog.LevelNames)
	fs.DurationVar(&c.ShutdownGrace, "shutdown-grace", 10*time.Second, "how long to let requests finish on shutdown")
	fs.BoolVar(&c.AllowLocalSources, "allow-local-sources", false, "let specs mirror paths and file: URLs of the minions' machines (lorry refuses them otherwise)")
	fs.BoolVar(&c.PeriodicWork, "periodic-work", false, "do the periodic work of the timer units in-process, for machines without systemd")
	fs.BoolVar(&c.InsecureNoAuth, "insecure-no-auth", false, "ask no one for a token: whoever reaches the WEBAPP may do everything, minions' work included (tests and demos only)")
	fs.StringVar(&c.ReadAccess, "read-access", AccessAnonymous, "who may read the pages and the read-only routes: anonymous, or token (any token, or a signed-in browser)")
	fs.StringVar(&c.MetricsAccess, "metrics-access", AccessAnonymous, "who may read /metrics: anonymous or token")
	fs.StringVar(&c.AdminTokenFile, "admin-token-file", "", "`file` of the admin token that \"lorry-controller-webapp call\" sends; the WEBAPP itself needs none")
	fs.StringVar(&c.NotifyURL, "notify-url", "", "`url` to POST notifications of events to (docs/operations.md); empty: none")
	fs.StringVar(&c.NotifySecretFile, "notify-secret-file", "", "`file` of the secret that signs each notification (HMAC-SHA256); needed with --notify-url")
	fs.StringVar(&c.NotifyEventList, "notify-events", "", "comma-separated `events` to notify of, of "+strings.Join(statedb.Events, ", ")+"; empty: all")
	fs.StringVar(&c.HookSecretFile, "hook-secret-file", "", "`file` of the secret of the forges' push hooks (/1.0/hooks/gitlab, gitea, github); empty: the hooks are off")
	fs.StringVar(&c.PublicURL, "public-url", "", "`url` that browsers reach the WEBAPP at, such as https://lorry.example.org behind a TLS proxy: with https the session cookie is Secure; notifications link to its pages")
	fs.DurationVar(&c.IdleTimeout, "idle-timeout", 2*time.Minute, "close a keep-alive connection idle for this `duration` between requests")
	fs.DurationVar(&c.BodyReadTimeout, "body-read-timeout", 30*time.Second, "answer 408 and close the connection when a request body sends nothing for this `duration`")
	fs.Int64Var(&c.BodyMinRate, "body-min-rate", 1024, "a request body may take --body-read-timeout plus one second for every this many `bytes` that came; 0: no such bound")
	fs.IntVar(&c.MaxConnections, "max-connections", 0, "most connections open at once; at the cap a new one takes the place of the one idle longest; 0: three quarters of the open files allowed")
	fs.StringVar(&c.BackupDirectory, "backup-directory", "", "`dir`ectory that POST /1.0/backup writes backups of the state database into; empty: none")
	fs.StringVar(&c.ConfigFile, "config", "", "read flags from this `file` of key = value lines (the command line wins)")
}

// check checks the flags' values, each alone and together.
func (c *Config) check() error {
	if c.BackupStateDB != "" {
		if err := statedb.CheckBackupAddress(c.BackupStateDB); err != nil {
			return fmt.Errorf("--backup-statedb %s: %w", c.BackupStateDB, err)
		}
	}
	if c.ReplicaLease < 3*time.Second {
		return fmt.Errorf("--replica-lease %v: want at least 3s", c.ReplicaLease)
	}
	if c.ReplicaForget <= 2*c.ReplicaLease {
		return fmt.Errorf("--replica-forget %v: want more than twice --replica-lease %v, after which a WEBAPP not seen is down",
			c.ReplicaForget, c.ReplicaLease)
	}
	if err := c.Downstream.Validate(); err != nil {
		return err
	}
	for _, a := range []struct{ flag, value string }{{"read-access", c.ReadAccess}, {"metrics-access", c.MetricsAccess}} {
		if a.value != AccessAnonymous && a.value != AccessToken {
			return fmt.Errorf("--%s %q: want %s or %s", a.flag, a.value, AccessAnonymous, AccessToken)
		}
	}
	if c.GhostTimeout <= 0 {
		return errors.New("--ghost-timeout must be positive")
	}
	if c.ClaimTimeout <= 0 {
		return errors.New("--claim-timeout must be positive")
	}
	if c.IdleTimeout <= 0 || c.BodyReadTimeout <= 0 {
		return errors.New("--idle-timeout and --body-read-timeout must be positive")
	}
	if c.BodyMinRate < 0 || c.MaxConnections < 0 {
		return errors.New("--body-min-rate and --max-connections must not be negative")
	}
	if err := c.checkNotify(); err != nil {
		return err
	}
	if err := c.checkPublicURL(); err != nil {
		return err
	}
	if err := c.checkReplicaURL(); err != nil {
		return err
	}
	return c.checkLease()
}
