package mirror

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"lorrycontroller.dev/lc/atomicfile"
	"lorrycontroller.dev/lc/lorryspec"
	"lorrycontroller.dev/lc/redact"
)

func init() { importers["svn"] = importSvn }

// git-svn writes each part of the layout to its own namespace of the
// conversion repository, so that no svn branch can be taken for trunk or
// a tag, whatever its name.
const (
	svnTrunkRef    = "refs/svn/trunk"
	svnBranchesRef = "refs/svn/branches/"
	svnTagsRef     = "refs/svn/tags/"
)

// importSvn converts a Subversion repository with git-svn, as upstream
// Lorry did: trunk becomes master, svn branches become branches, and svn
// tags become tags. git-svn makes a commit for the copy that made each
// svn tag; the tag is a lightweight tag of that commit.
//
// The conversion repository, with git-svn's map of revisions to commits,
// lives in svn/git beside the mirror, so that each run fetches only the
// revisions that are new upstream.
func importSvn(ctx context.Context, j *job, v any) ([]string, bool, error) {
	s := v.(*lorryspec.Svn)
	layout, err := s.ParsedLayout()
	if err != nil {
		return nil, false, err
	}
	if err := needConverterTools(ctx, "svn", converterTool{"git-svn", "git-svn"}); err != nil {
		return nil, false, err
	}
	// git-svn is given the URL without credentials, and asks for them
	// with GIT_ASKPASS, which answers from its environment. A conversion
	// made when the URL kept them (in svn/source, the repository's
	// configuration and every commit's git-svn-id) is not continued: it
	// starts afresh.
	plain, user, pass, err := svnCredentials(s.URL)
	if err != nil {
		return nil, false, err
	}
	source := strings.Join([]string{plain, layout.Trunk, layout.Branches, layout.Tags}, "\n")
	dir, err := j.converterDir("svn", source)
	if err != nil {
		return nil, false, err
	}
	auth, err := svnAskpass(dir, user, pass)
	if err != nil {
		return nil, false, err
	}
	gitDir := filepath.Join(dir, "git")
	if err := j.svnInit(ctx, gitDir, s.URL, plain, layout, auth); err != nil {
		return nil, false, err
	}
	fmt.Fprintf(j.out, "fetching %s with git-svn\n", redact.URLs(s.URL))
	// --no-auth-cache: Subversion keeps no password in its configuration
	// directory.
	args := []string{"svn", "fetch", "--no-auth-cache"}
	if !j.opts.Verbose {
		// One line per revision is progress enough; the files each
		// revision touched are not.
		args = append(args, "--quiet")
	}
	if err := j.runTool(ctx, dir, j.upstreamEnv(gitDir, auth...), "git", args...); err != nil {
		return nil, false, fmt.Errorf("convert %s: %w", redact.URLs(s.URL), err)
	}
	refs, err := j.converterRefs(ctx, gitDir, "refs/svn/")
	if err != nil {
		return nil, false, err
	}
	return j.takeConverted(ctx, gitDir, svnRefspecs(refs)...)
}

// svnInit makes the conversion repository for the spec's url, plain
// without its credentials, and layout, unless it is there; auth is the
// environment that gives git-svn the credentials.
func (j *job) svnInit(ctx context.Context, gitDir, url, plain string, layout lorryspec.SvnLayout, auth []string) error {
	return j.initConverterRepo(ctx, gitDir, func(tmp string) error {
		args := []string{"svn", "init", "--no-auth-cache", "--trunk=" + layout.Trunk}
		if layout.Branches != "" {
			args = append(args, "--branches="+layout.Branches)
		}
		if layout.Tags != "" {
			args = append(args, "--tags="+layout.Tags)
		}
		args = append(args, "--", plain)
		if err := j.runTool(ctx, filepath.Dir(gitDir), j.upstreamEnv(tmp, auth...), "git", args...); err != nil {
			return fmt.Errorf("set up the conversion of %s: %w", redact.URLs(url), err)
		}
		// git svn init chose where in the svn repository each part of
		// the layout is; only where it goes in git is changed.
		for key, ref := range map[string]string{
			"svn-remote.svn.fetch":    svnTrunkRef,
			"svn-remote.svn.branches": svnBranchesRef + "*",
			"svn-remote.svn.tags":     svnTagsRef + "*",
		} {
			val, err := j.gitIn(ctx, tmp, "config", "--get", key)
			if err != nil {
				continue // not in the layout
			}
			path, _, ok := strings.Cut(strings.TrimSpace(val), ":")
			if !ok {
				return fmt.Errorf("git svn init wrote %s = %q, which is not PATH:REF", key, val)
			}
			if _, err := j.gitIn(ctx, tmp, "config", key, path+":"+ref); err != nil {
				return err
			}
		}
		return nil
	})
}

// svnRefspecs maps the refs of the conversion repository to the mirror.
// An svn branch named master would clash with trunk, which wins.
func svnRefspecs(refs []string) []string {
	var trunk, branches, tags bool
	for _, r := range refs {
		trunk = trunk || r == svnTrunkRef
		branches = branches || strings.HasPrefix(r, svnBranchesRef)
		tags = tags || strings.HasPrefix(r, svnTagsRef)
	}
	var specs []string
	if trunk {
		specs = append(specs, "+"+svnTrunkRef+":refs/heads/master")
	}
	if branches {
		specs = append(specs, "+"+svnBranchesRef+"*:refs/heads/*")
		if trunk {
			specs = append(specs, "^"+svnBranchesRef+"master")
		}
	}
	if tags {
		specs = append(specs, "+"+svnTagsRef+"*:refs/tags/*")
	}
	return specs
}

// svnCredentials splits the user and password off an svn URL (see
// splitURL): plain is url without them. Subversion asks for them over
// http, https and svn; a password in an svn+ssh URL, which ssh would be
// handed, is refused, and a user alone stays in it for ssh.
func svnCredentials(rawURL string) (plain, user, pass string, err error) {
	u, err := splitURL(rawURL)
	if errors.Is(err, errNoURL) {
		return rawURL, "", "", nil
	}
	if err != nil {
		return "", "", "", err
	}
	if !u.hasUser {
		return rawURL, "", "", nil
	}
	switch u.scheme {
	case "http", "https", "svn":
		return u.plain(false), u.user, u.password, nil
	}
	if u.hasPassword {
		return "", "", "", fmt.Errorf("svn URL %q has a password, which lorry gives Subversion only over http, https and svn", redact.URLs(rawURL))
	}
	return rawURL, "", "", nil
}

// svnAskpassScript answers git-svn's prompts (git's GIT_ASKPASS
// protocol: the prompt is the argument, the answer the first line of the
// output) from the environment, which only this user can read: the user
// for "Username:", the password for anything else.
const svnAskpassScript = `#!/bin/sh
case "$1" in
Username*) printf '%s\n' "$LORRY_SVN_USER" ;;
*) printf '%s\n' "$LORRY_SVN_PASSWORD" ;;
esac
`

// svnAskpass is the environment that has git-svn take user and pass
// from the script svnAskpassScript, which it writes into dir: the script
// holds no credential. It is nil when there are no credentials.
func svnAskpass(dir, user, pass string) ([]string, error) {
	if user == "" && pass == "" {
		return nil, nil
	}
	script := filepath.Join(dir, "askpass")
	if err := atomicfile.WriteFile(script, []byte(svnAskpassScript), 0o755); err != nil {
		return nil, err
	}
	return []string{"GIT_ASKPASS=" + script, "SSH_ASKPASS=", "LORRY_SVN_USER=" + user, "LORRY_SVN_PASSWORD=" + pass}, nil
}
