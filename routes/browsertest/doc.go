// Package browsertest drives the WEBAPP's web pages in a real browser:
// Debian's Chromium, headless, against the real WEBAPP and minion binaries.
// It holds tests only; `make test` runs them, and they fail, saying what to
// install, where Chromium is missing.
//
// go test ./routes/browsertest -args -screenshots DIR also saves the
// screenshots of the status, job and lorry pages, at desktop and phone
// width, into DIR; `make screenshots` refreshes docs/screenshots so.
package browsertest
