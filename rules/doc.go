// Package rules holds the rules of the business that the state database
// applies: how a job's end is classed, how a lorry's failure streak grows
// and when it hard-fails, how long it backs off, when it is due next by
// its interval or its schedule, and which lorry a minion gets among the
// entries the queues offer. It knows no SQL: the store reads what a rule
// needs, asks the rule, and writes what it answers, so that both of the
// store's drivers apply the same rules and a test can try every rule
// without a database.
package rules
