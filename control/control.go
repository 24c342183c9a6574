// Package control is the WEBAPP's application: the operations it performs
// on the run queue, each a method of App taking and returning plain Go
// values. It hands out jobs and takes their reports, applies the
// configuration read from CONFGIT, lists the Upstream Hosts, ticks the
// schedules and sweeps away ghost, orphaned and old jobs.
//
// The transport is elsewhere: the routes package decodes a request, calls
// one of these methods and encodes the answer, and the periodic work calls
// the same methods. Nothing here knows HTTP; the data itself is statedb's.
//
// The work that one process at a time must do takes the lease of its kind
// in the database (leases.go), so that any number of WEBAPP processes may
// share one database: LeaseConfig for applying the configuration,
// LeaseListing for listing the hosts and LeaseTick for the ticks and
// sweeps of App.Tick. Within a process a mutex of each kind (configMu,
// lsMu, tickMu) keeps its callers one at a time too, as they share the
// process's lease owner.
package control

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"lorrycontroller.dev/lc/clock"
	"lorrycontroller.dev/lc/confgit"
	"lorrycontroller.dev/lc/hosts/downstream"
	"lorrycontroller.dev/lc/statedb"
)

// ConfigReader reads the configuration from CONFGIT. One that is also a
// ConfigHistory, as *confgit.Source is, can hand out scrapers and serve
// their runtimes.
type ConfigReader interface {
	Read(ctx context.Context) (*confgit.Config, error)
}

// ConfigStreamer is a ConfigReader that can hand out the lorries of a
// configuration in batches, without holding them all, as
// *confgit.Source does.
type ConfigStreamer interface {
	ReadEach(ctx context.Context, n int, sections func(*confgit.Config) error, each func([]confgit.Lorry) error) (*confgit.Config, error)
}

// ConfigHistory reads what earlier commits of CONFGIT held, for scrapers:
// the files handed out with a job and the runtime directories minions
// build from. *confgit.Source is one; a ConfigReader that is not one cannot
// hand out scrapers or serve runtimes.
type ConfigHistory interface {
	ReadFiles(ctx context.Context, commit string, paths []string) ([][]byte, error)
	RuntimeArchive(id string) (*confgit.Archive, error)
}

// App holds what the operations need. Build it in main; its zero locks
// are ready.
type App struct {
	DB     *statedb.DB
	Config ConfigReader
	Log    *slog.Logger
	// Downstream prepares the repository each job pushes to; nil is
	// downstream.None.
	Downstream downstream.Host

	// GhostTimeout is how long a running job may go without an update
	// before remove-ghost-jobs ends it.
	GhostTimeout time.Duration
	// Lease is how long a minion may go without delivering a job-update
	// before it kills its job; zero means half of GhostTimeout. It must
	// be shorter than GhostTimeout by more than KillGrace, so that a
	// minion cut off from the WEBAPP has killed its job before the job is
	// ended as a ghost and its lorry handed out again.
	Lease time.Duration
	// KillGrace is the longest a minion waits between SIGTERM and
	// SIGKILL when it kills a job.
	KillGrace time.Duration
	// OutputLimit is the output kept per job, which a minion need not
	// hold more of; zero means statedb.DefaultOutputLimit.
	OutputLimit int64
	// ClaimTimeout is how long a job handed out may stay claimed, its
	// minion not having confirmed that it started it, before it ends
	// orphaned; 0 is DefaultClaimTimeout.
	ClaimTimeout time.Duration
	// JobMaxAge is how long remove-old-jobs keeps finished jobs by default.
	JobMaxAge time.Duration
	// FakeClock, if set, is the debug clock that pretend-time moves.
	FakeClock *clock.Fake
	// AllowLocalSources has the minions let lorry mirror paths and file:
	// URLs of their machines.
	AllowLocalSources bool
	// BackupDirectory is where Backup writes backups of the state
	// database; "" for nowhere.
	BackupDirectory string

	// ListHost lists an Upstream Host; nil means hosts cannot be listed.
	ListHost HostLister
	// CheckHost, if set, checks a host section at read-configuration
	// beyond what confgit knows: the keys of its type.
	CheckHost func(confgit.Host) error
	// Notifications says where notifications go, for the notifications
	// page.
	Notifications Notifications
	// ConfigBatch is how many lorries of the configuration are applied
	// in one transaction; 0 is configBatch.
	ConfigBatch int

	// Owner is the name this process holds leases under; "" makes one
	// of the host's name, the pid and a random part. Two Apps sharing a
	// database must never share an Owner.
	Owner string

	// LeaseWait is how long an operation asked for by an admin or a hook
	// waits for a lease that another process holds; 0 is
	// DefaultLeaseWait.
	LeaseWait time.Duration

	// LeaseTerm is the term of the leases of the work one process at a
	// time does (--replica-lease); 0 gives each kind of work its own,
	// long enough to cover its longest step.
	LeaseTerm time.Duration
	// Replica names this process to the others sharing the database and
	// on the status page, and says where it is reached (Heartbeat).
	Replica Replica
	// ReplicaForget is how long a replica not heard from stays listed,
	// down (--replica-forget); 0 is DefaultReplicaForget.
	ReplicaForget time.Duration
	// Background is the WEBAPP's own context: an application of the
	// configuration runs until it ends, whatever its caller does; nil
	// means it runs to its end.
	Background context.Context

	ownerOnce sync.Once
	ownerName string
	// leaseMu guards kept, the leases this process holds by kind, each
	// with the means to stop renewing it.
	leaseMu sync.Mutex
	kept    map[string]heldLease

	// lsMu makes listing the hosts one at a time within the process.
	lsMu sync.Mutex
	// configMu makes reading and applying CONFGIT one step, so that two
	// reads racing (a push hook and a timer) never apply an older commit
	// over a newer one.
	configMu sync.Mutex
	// configApplied is the commit whose configuration this process last
	// applied whole; configMu guards it.
	configApplied string
	// firstApply is the database's time of this process's first
	// read of the configuration; configMu guards it. A commit that
	// another process applied whole since then is this process's too.
	firstApply int64
	// configRuns keeps the applications of StartConfiguration one at a
	// time.
	configRuns configRuns
	// tickMu makes the ticks and sweeps of Tick one at a time within the
	// process, and guards ticked.
	tickMu sync.Mutex
	// ticked says this process has ticked whole once. Its first tick,
	// and one that finds the wall clock behind the last tick of any
	// process (statedb's LastTick: set back, or set back while the
	// WEBAPPs were stopped), looks at the entries ahead of the clock too.
	ticked bool
}

// Notifications says where notifications go, for the notifications page;
// the zero value is "nowhere". Whether an event is put into the outbox is
// the database's to decide (statedb.Options.Notify).
type Notifications struct {
	URL    string
	Events []string
}

// History is a.Config as a ConfigHistory, if it is one.
func (a *App) History() (ConfigHistory, bool) {
	h, ok := a.Config.(ConfigHistory)
	return h, ok
}

func (a *App) downstream() downstream.Host {
	if a.Downstream == nil {
		return downstream.None{}
	}
	return a.Downstream
}
