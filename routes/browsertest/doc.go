// Package browsertest drives the WEBAPP's web pages in a real browser:
// Debian's Chromium, headless, against the real WEBAPP and minion binaries.
// It holds tests only; `make test` runs them, and they fail, saying what to
// install, where Chromium is missing. They check every page with axe-core,
// of the version that axe_test.go names, which npm fetches once into the
// user's cache (os.UserCacheDir); without npm they fail, saying so.
//
// go test ./routes/browsertest -args -screenshots DIR also saves the
// screenshots of the status, job and lorry pages, at desktop and phone
// width, into DIR; `make screenshots` refreshes docs/screenshots so.
package browsertest
