// Package githttp serves git repositories over git's smart HTTP protocol by
// running git http-backend, so that tests and demos mirror from a real
// HTTP upstream on loopback.
package githttp

import (
	"net/http"
	"net/http/cgi"
	"os/exec"
)

// Handler serves the repositories under root, read and write, at
// /<path relative to root>.
func Handler(root string) (http.Handler, error) {
	git, err := exec.LookPath("git")
	if err != nil {
		return nil, err
	}
	return &cgi.Handler{
		Path: git,
		Args: []string{"http-backend"},
		Env: []string{
			"GIT_PROJECT_ROOT=" + root,
			"GIT_HTTP_EXPORT_ALL=1",
			// Anonymous pushes are fine on loopback in tests.
			"REMOTE_USER=test",
			"GIT_CONFIG_PARAMETERS='http.receivepack=true'",
		},
	}, nil
}
