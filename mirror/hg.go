package mirror

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"lorrycontroller.dev/lc/lorryspec"
	"lorrycontroller.dev/lc/redact"
)

func init() { importers["hg"] = importHg }

// hgRemote is the name of the upstream in the conversion repository.
// git-remote-hg keeps its clone of the upstream and its marks under that
// name, and throws them away after each fetch from an unnamed URL.
const hgRemote = "hg"

// importHg converts a Mercurial repository with git-remote-hg. Each
// named branch becomes branches/<name> and each bookmark a branch of its
// name; the default branch is also master. Tags become tags.
//
// The conversion repository lives in hg/git beside the mirror, with
// git-remote-hg's clone and marks inside it, so that each run pulls and
// converts only the changesets that are new upstream.
func importHg(ctx context.Context, j *job, v any) ([]string, bool, error) {
	h := v.(*lorryspec.Hg)
	if err := needConverterTools(ctx, "hg", converterTool{"git-remote-hg", "git-remote-hg"}); err != nil {
		return nil, false, err
	}
	// git hands the remote's URL to git-remote-hg on its command line, so
	// it is given without credentials; Mercurial takes them from a
	// configuration file outside the working area that only this user can
	// read, there for the fetch alone.
	plain, auth, err := hgCredentials(h.URL)
	if err != nil {
		return nil, false, err
	}
	dir, err := j.converterDirOf("hg", plain, h.URL)
	if err != nil {
		return nil, false, err
	}
	gitDir := filepath.Join(dir, "git")
	err = j.initConverterRepo(ctx, gitDir, func(tmp string) error {
		for _, kv := range [][]string{
			// Only the branches and tags: git-remote-hg's notes, which
			// map commits to changesets, are its own business.
			{"remote." + hgRemote + ".fetch", "+refs/heads/*:refs/heads/*"},
			{"--add", "remote." + hgRemote + ".fetch", "+refs/tags/*:refs/tags/*"},
		} {
			if _, err := j.gitIn(ctx, tmp, append([]string{"config"}, kv...)...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	// Set at every run: a conversion made before kept the URL with its
	// credentials.
	if _, err := j.gitIn(ctx, gitDir, "config", "remote."+hgRemote+".url", "hg::"+plain); err != nil {
		return nil, false, err
	}
	fmt.Fprintf(j.out, "fetching %s with git-remote-hg\n", redact.URLs(h.URL))
	// git reaches the upstream only through git-remote-hg; the spec's URL
	// was checked for Mercurial.
	extra := []string{"GIT_ALLOW_PROTOCOL=hg"}
	if auth != "" {
		private, err := privateDir("hg")
		if err != nil {
			return nil, false, err
		}
		defer os.RemoveAll(private)
		rc := filepath.Join(private, "auth.hgrc")
		if err := os.WriteFile(rc, []byte(auth), 0o600); err != nil {
			return nil, false, err
		}
		extra = append(extra, "HGRCPATH="+hgrcPath(rc))
	}
	env := j.gitEnv(gitDir, extra)
	if err := j.runTool(ctx, dir, env, "git", "fetch", "--progress", hgRemote); err != nil {
		return nil, false, fmt.Errorf("convert %s: %w", redact.URLs(h.URL), err)
	}
	return j.takeConverted(ctx, gitDir, "+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*")
}

// hgCredentials splits the user and password off url (see splitURL):
// plain is url without them, and auth the Mercurial configuration that
// gives them for url's host, "" when url has none. Mercurial takes them
// over http, https and static-http; a password in a URL of another
// scheme (ssh) is refused, and a user alone stays in it.
func hgCredentials(rawURL string) (plain, auth string, err error) {
	u, err := splitURL(rawURL)
	if errors.Is(err, errNoURL) {
		return rawURL, "", nil
	}
	if err != nil {
		return "", "", err
	}
	if !u.hasUser {
		return rawURL, "", nil
	}
	var prefix string
	switch u.scheme {
	case "http", "https":
		prefix = u.scheme + "://" + u.hostPort
	case "static-http":
		// Mercurial reads a static-http:// repository over http://.
		prefix = "http://" + u.hostPort
	default:
		if u.hasPassword {
			return "", "", fmt.Errorf("hg URL %q has a password, which lorry gives Mercurial only over http, https and static-http", redact.URLs(rawURL))
		}
		return rawURL, "", nil
	}
	for _, v := range []string{u.user, u.password} {
		// A value of Mercurial's configuration ends at its line, and
		// loses the white space around it.
		if strings.TrimSpace(v) != v {
			return "", "", fmt.Errorf("hg URL %q has a user or password that starts or ends with white space, which Mercurial's configuration cannot hold", redact.URLs(rawURL))
		}
		// Mercurial encodes the credentials it sends twice over, as
		// if each byte were a character.
		if strings.IndexFunc(v, func(r rune) bool { return r > 0x7e }) >= 0 {
			return "", "", fmt.Errorf("hg URL %q has a user or password with a character outside ASCII, which Mercurial does not send as it is", redact.URLs(rawURL))
		}
	}
	auth = "[auth]\nlorry.prefix = " + prefix + "\nlorry.username = " + u.user + "\n"
	if u.password != "" {
		auth += "lorry.password = " + u.password + "\n"
	}
	return u.plain(false), auth, nil
}

// hgrcPath is HGRCPATH for Mercurial's own configuration files and rc
// after them. HGRCPATH replaces the files Mercurial reads, so those that
// it reads without one are named (or the HGRCPATH of lorry's
// environment); files that do not exist are skipped.
func hgrcPath(rc string) string {
	if p, ok := os.LookupEnv("HGRCPATH"); ok {
		return p + string(os.PathListSeparator) + rc
	}
	paths := []string{"/etc/mercurial/hgrc", "/etc/mercurial/hgrc.d"}
	if home, err := os.UserHomeDir(); err == nil {
		config := os.Getenv("XDG_CONFIG_HOME")
		if config == "" {
			config = filepath.Join(home, ".config")
		}
		paths = append(paths, filepath.Join(home, ".hgrc"), filepath.Join(config, "hg", "hgrc"))
	}
	return strings.Join(append(paths, rc), string(os.PathListSeparator))
}
