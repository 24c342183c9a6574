package rules

import (
	"fmt"
	"slices"
	"strings"

	"lorrycontroller.dev/lc/wire"
)

// TakesQueue says whether a minion that asked for queues and ignores
// ignore takes work from queue q. queues wins if both are given.
func TakesQueue(q string, queues, ignore []string) bool {
	if len(queues) > 0 {
		return slices.Contains(queues, q)
	}
	return !slices.Contains(ignore, q)
}

// OnlyKind is the one kind of entry a minion that takes kinds takes, or
// "" when it takes any: none named is every kind.
func OnlyKind(kinds []string) string {
	if len(kinds) == 0 || slices.Contains(kinds, wire.KindLorry) && slices.Contains(kinds, wire.KindScraper) {
		return ""
	}
	return kinds[0]
}

// HostFull is why a minion on host, which runs onHost live jobs, gets
// nothing when its max_jobs is hostMax (nil for no limit); "" when it
// may get a job.
func HostFull(host string, onHost int64, hostMax *int64) string {
	if hostMax != nil && onHost >= *hostMax {
		return fmt.Sprintf("%d jobs running on host %s, its max_jobs is %d", onHost, host, *hostMax)
	}
	return ""
}

// QueueFull says whether a queue whose limit is now limit (nil for none)
// is full with running live jobs.
func QueueFull(limit *int64, running int64) bool {
	return limit != nil && running >= *limit
}

// NoOpenQueue is why a minion gets nothing when none of the queues it
// takes may hand out an entry: full names those that are full.
func NoOpenQueue(full []string) string {
	if len(full) > 0 {
		return "queues full: " + strings.Join(full, ", ")
	}
	return "this minion takes none of the queues"
}

// NoneDue is why a minion that takes only kind ("" for any) gets
// nothing when no open queue has a due entry; full names the queues it
// takes that are full.
func NoneDue(kind string, full []string) string {
	why := "no lorry is due in the queues this minion takes"
	if kind != "" {
		why = "no " + kind + " is due in the queues this minion takes"
	}
	if len(full) > 0 {
		why += " that are not full (full: " + strings.Join(full, ", ") + ")"
	}
	return why
}

// PickHead chooses the entry a minion gets among the heads of the open
// queues (each open queue's choice, by the queue's sort order, of its
// due entries): the one first in the run queue. head answers a queue's
// choice, as its run-queue position, and whether it has one. ok is false
// when no open queue has a due entry.
func PickHead(open map[string]string, head func(queue string) (pos int64, ok bool)) (pos int64, ok bool) {
	for name := range open {
		if p, has := head(name); has && (!ok || p < pos) {
			pos, ok = p, true
		}
	}
	return pos, ok
}

// Offerable says whether an entry of kind in queue, due at nextDue and
// running a job or not, may be handed out at now to a minion that takes
// only takeKind ("" for any) from the open queues: whether a choice made
// earlier still holds.
func Offerable(open map[string]string, takeKind, queue, kind string, running bool, nextDue, now int64) bool {
	_, isOpen := open[queue]
	return !running && nextDue <= now && isOpen && (takeKind == "" || kind == takeKind)
}
