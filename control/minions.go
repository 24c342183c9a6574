package control

import "lorrycontroller.dev/lc/statedb"

// Minion health, as Bistro names its workers' states.
const (
	// HealthNew is a minion whose current process has been heard from
	// once: it has yet to show that it keeps polling.
	HealthNew = "NEW"
	// HealthHealthy is a minion heard from again within the ghost timeout.
	HealthHealthy = "HEALTHY"
	// HealthUnhealthy is a minion not heard from for longer than the
	// ghost timeout.
	HealthUnhealthy = "UNHEALTHY"
	// HealthMustDie is a retired minion: told to exit whenever it asks.
	HealthMustDie = "MUST_DIE"
)

// MinionHealth tells the health of m at now, given the ghost timeout in
// seconds.
func MinionHealth(m statedb.Minion, now, ghostTimeout int64) string {
	switch {
	case m.Retire:
		return HealthMustDie
	case now-m.LastSeen > ghostTimeout:
		return HealthUnhealthy
	case m.Heard <= 1:
		return HealthNew
	}
	return HealthHealthy
}
