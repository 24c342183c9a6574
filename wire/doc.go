// Package wire is the job protocol between the WEBAPP, its minions and
// lorry: every message they exchange, its fields, and the limits both
// sides keep. It is the protocol's reference; docs/api.md describes the
// same routes for people. The package imports only the standard library,
// so that each side, and the state database that keeps what a job
// reported, can import it without importing each other.
//
// # Asking for a job
//
// A minion asks with POST /1.0/give-me-job, its body form-encoded: a
// [JobRequest] (host, pid, minion, queues, ignore_queues, kinds). The
// WEBAPP answers 204 with an empty body when there is nothing to do, an
// [Offer] when there is, and [Retired] when the minion is retired and must
// exit. Asked again by the same minion (same name, host and pid) while its
// job runs, the WEBAPP offers the same job again.
//
// # Running it
//
// For a job of kind [KindLorry], the minion runs lorry on the spec in
// [Offer.Text], with --working-area, --result-fd, --allow-local-sources
// when [Offer.AllowLocalSources] says so, and [Offer.PushURL], when not
// empty, in lorry's environment as [EnvPushURL] (a push URL may carry a
// token, which a command line would show to every user). lorry writes a
// [ResultFile] to the --result-fd descriptor, a file of the minion's with
// no name, when it is done. A job of kind
// [KindScraper] runs [Offer.Scraper] instead.
//
// # Reporting on it
//
// While the job runs, and once when it has ended, the minion sends POST
// /1.0/job-update, form-encoded: an [Update]. Updates while it runs have
// exit "no" ([ExitRunning]); the final one has the exit code, and, from
// lorry's result file, the upstream's head and the refs the run changed
// (after a success) or the error class (after a failure). The WEBAPP
// answers an [UpdateAnswer]: kill says the minion must kill the job,
// retire that it must exit after it. A 404 or 409 says the job is no
// longer the minion's: it kills the job and stops reporting on it.
//
// An update says where its output starts in each stream
// ([Update.StdoutOffset], [Update.StderrOffset]), so that an update sent
// again after its answer was lost adds nothing twice: the WEBAPP stores
// only what it does not have, and answers the final update sent again as
// it answered the first. An update whose output starts past what the
// WEBAPP has, by more than its cut, is answered 416 with an [UpdateGap]:
// the minion sends again from there.
//
// # Leases
//
// Every answer about a job carries [LeaseTerms]: the minion kills its job
// when none of its updates has reached the WEBAPP for Lease seconds,
// counted from when it sent the request whose answer renewed the lease,
// and waits at most KillGrace seconds between SIGTERM and SIGKILL. Both
// are whole seconds; zero means the WEBAPP did not say.
//
// # Output
//
// The WEBAPP keeps at most output_limit bytes of a job's output
// ([DefaultOutputLimit] unless told): the first half as the head and the
// last half as the tail, with [CutMark] where the middle was dropped. A
// minion that cannot deliver keeps its own copy the same way, leaving
// [MaxCutMark] bytes of the tail for the mark, and says with cut_bytes how
// much it dropped just before an update's output. A job-update body is at
// most [MaxUpdateBody] bytes.
package wire
