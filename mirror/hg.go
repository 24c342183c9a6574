package mirror

import (
	"context"
	"fmt"
	"path/filepath"

	"lorrycontroller/lorryspec"
	"lorrycontroller/redact"
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
	dir, err := j.converterDir("hg", h.URL)
	if err != nil {
		return nil, false, err
	}
	gitDir := filepath.Join(dir, "git")
	err = j.initConverterRepo(ctx, gitDir, func(tmp string) error {
		for _, kv := range [][]string{
			{"remote." + hgRemote + ".url", "hg::" + h.URL},
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
	fmt.Fprintf(j.out, "fetching %s with git-remote-hg\n", redact.URLs(h.URL))
	// git reaches the upstream only through git-remote-hg; the spec's URL
	// was checked for Mercurial.
	env := gitEnv(gitDir, []string{"GIT_ALLOW_PROTOCOL=hg"})
	if err := j.runTool(ctx, dir, env, "git", "fetch", "--progress", hgRemote); err != nil {
		return nil, false, fmt.Errorf("convert %s: %w", redact.URLs(h.URL), err)
	}
	return j.takeConverted(ctx, gitDir, "+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*")
}
