package mirror

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"lorrycontroller.dev/lc/redact"
)

// ClassLFS is the error class of a run that could not fetch or push an
// LFS object: the refs are there, but a clone's checkout would fail.
const ClassLFS = "lfs"

// classError is an error of a class that an operator filters by.
type classError struct {
	class string
	err   error
}

func (e *classError) Error() string { return e.err.Error() }
func (e *classError) Unwrap() error { return e.err }

// errorClass is the class of err, "" for none.
func errorClass(err error) string {
	var c *classError
	if errors.As(err, &c) {
		return c.class
	}
	return ""
}

// lfsEndpoint is the LFS server of the repository at url, as git-lfs
// derives it from a remote's URL. lorry sets it as lfs.url itself, so
// that a .lfsconfig committed upstream cannot send git-lfs elsewhere, to
// a path of this machine say.
func lfsEndpoint(url string) string {
	switch gitTransport(url) {
	case "http", "https":
		u := strings.TrimSuffix(url, "/")
		if !strings.HasSuffix(u, ".git") {
			u += ".git"
		}
		return u + "/info/lfs"
	case "git":
		u := strings.TrimSuffix("https"+strings.TrimPrefix(url, "git"), "/")
		if !strings.HasSuffix(u, ".git") {
			u += ".git"
		}
		return u + "/info/lfs"
	case "file":
		// git-lfs reads and writes a file: URL's LFS objects in the
		// repository's lfs/objects with its standalone transfer agent.
		if strings.HasPrefix(url, "file://") {
			return url
		}
		if abs, err := filepath.Abs(url); err == nil {
			url = abs
		}
		return "file://" + url
	}
	// ssh: git-lfs asks the server with git-lfs-authenticate.
	if n := schemeLen(url); n > 0 && strings.HasPrefix(url[n:], "://") {
		return url
	}
	host, path, _ := strings.Cut(url, ":")
	return "ssh://" + host + "/" + strings.TrimPrefix(path, "/")
}

// lfsConfig is the environment that gives git-lfs, and the git it runs,
// its configuration for the repository at url, with url's credentials
// (see credentials), plus the "-c name=value" options of config. It is
// given as GIT_CONFIG_* rather than as options, so that messages name
// "git lfs". The first result is url without its credentials.
func lfsConfig(url string, config []string) (string, []string, error) {
	plain, kv, err := credentials(url)
	if err != nil {
		return "", nil, err
	}
	kv = append(kv,
		"lfs.url="+lfsEndpoint(plain),
		// Mirrors take no locks, and not every server has the API.
		"lfs.locksverify=false",
	)
	for i := 0; i+1 < len(config); i += 2 {
		if config[i] == "-c" {
			kv = append(kv, config[i+1])
		}
	}
	return plain, configEnv(kv), nil
}

// fetchLFS fetches every LFS object that the mirror's refs point to from
// the LFS server of url. A missing or corrupt object fails the run: a
// mirror that skips it would hand clones a pointer in its place.
func (j *job) fetchLFS(ctx context.Context, url string, config []string) error {
	fmt.Fprintf(j.out, "fetching LFS objects from %s\n", redact.URLs(lfsEndpoint(url)))
	if !j.opts.AllowLocalSources {
		if err := checkRemoteHost(ctx, lfsEndpoint(url)); err != nil {
			return &classError{ClassLFS, fmt.Errorf("fetch the LFS objects of %s: %w", redact.URLs(url), err)}
		}
	}
	plain, config, err := lfsConfig(url, config)
	if err != nil {
		return &classError{ClassLFS, err}
	}
	env := j.upstreamEnv(j.gitDir, config...)
	if _, err := run(ctx, j.out, env, "git", "lfs", "fetch", "--all", plain); err != nil {
		return &classError{ClassLFS, fmt.Errorf("fetch the LFS objects of %s: %w", redact.URLs(url), err)}
	}
	return nil
}

// pushLFS pushes every LFS object that the mirror's refs point to, to the
// LFS server of the downstream url, before the refs that name them.
func (j *job) pushLFS(ctx context.Context, url string) error {
	fmt.Fprintf(j.out, "pushing LFS objects to %s\n", redact.URLs(lfsEndpoint(url)))
	remote, config, err := lfsConfig(url, nil)
	if err != nil {
		return &classError{ClassLFS, err}
	}
	if gitTransport(url) == "file" {
		// The standalone transfer agent takes the repository from the
		// remote, as a file: URL, whatever lfs.url says.
		remote = lfsEndpoint(remote)
	}
	env := j.gitEnv(j.gitDir, config)
	if _, err := run(ctx, j.out, env, "git", "lfs", "push", "--all", remote); err != nil {
		return &classError{ClassLFS, fmt.Errorf("push the LFS objects to %s: %w", redact.URLs(url), err)}
	}
	return nil
}
