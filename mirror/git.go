package mirror

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"lorrycontroller.dev/lc/lorryspec"
	"lorrycontroller.dev/lc/redact"
)

func init() { importers["git"] = importGit }

// importGit fetches the spec's refspecs from upstream into the mirror with
// the git command line, which speaks every transport and protocol v2, and
// uses the machine's ssh and credential set-up.
func importGit(ctx context.Context, j *job, v any) ([]string, bool, error) {
	g := v.(*lorryspec.Git)
	fetch, push, err := gitRefspecs(g.Refspecs)
	if err != nil {
		return nil, false, err
	}
	var args []string
	if g.CheckCertificates != nil && !*g.CheckCertificates {
		args = append(args, "-c", "http.sslVerify=false")
	}
	if len(g.Refspecs) == 0 {
		refs, err := j.refs(ctx)
		if err != nil {
			return nil, false, err
		}
		if len(refs) == 0 {
			// A first mirror of all branches and tags is a bare clone,
			// which writes its refs packed and takes the upstream's HEAD:
			// much faster than a fetch for a repository of many refs.
			if err := j.cloneGit(ctx, args, g.URL); err != nil {
				return nil, false, err
			}
			return push, g.Prune, j.lfsOf(ctx, g, args)
		}
	}
	// -c options apply to asking for the upstream's HEAD too.
	config := slices.Clip(args)
	// --atomic: a fetch that fails half-way leaves every ref as it was.
	args = append(args, "fetch", "--atomic", "--no-tags", "--no-write-fetch-head", "--progress")
	if g.Prune {
		args = append(args, "--prune")
	}
	plain, creds, err := credentials(g.URL)
	if err != nil {
		return nil, false, err
	}
	args = append(args, "--", plain)
	args = append(args, fetch...)
	fmt.Fprintf(j.out, "fetching %s\n", redact.URLs(g.URL))
	if _, err := run(ctx, j.out, j.upstreamEnv(j.gitDir, configEnv(creds)...), "git", args...); err != nil {
		return nil, false, fmt.Errorf("fetch %s: %w", redact.URLs(g.URL), withOwnershipHint(err))
	}
	// Upstream Lorry reported success when a refspec matched nothing and
	// the downstream stayed empty; say so instead.
	refs, err := j.refs(ctx)
	if err != nil {
		return nil, false, err
	}
	if !anyMatches(refs, push) {
		return nil, false, &classError{ClassEmpty, fmt.Errorf("no ref upstream matches the refspecs %s", strings.Join(fetch, " "))}
	}
	j.followUpstreamHead(ctx, config, g.URL, fetch, refs)
	return push, g.Prune, j.lfsOf(ctx, g, config)
}

// lfsOf fetches the LFS objects of the mirror when the spec asks for them.
func (j *job) lfsOf(ctx context.Context, g *lorryspec.Git, config []string) error {
	if !g.LFS {
		return nil
	}
	if err := j.fetchLFS(ctx, g.URL, config); err != nil {
		return err
	}
	j.lfs = true
	return nil
}

// followUpstreamHead points the mirror's HEAD at the branch the upstream's
// HEAD names, as it was mirrored, so that the downstream's default branch
// can follow it. A clone does that by itself; a fetch records no HEAD, so
// the upstream is asked. The fetch has succeeded by then, so a failure to
// ask leaves HEAD as it was rather than failing the run.
func (j *job) followUpstreamHead(ctx context.Context, args []string, url string, fetch []string, refs map[string]string) {
	plain, creds, err := credentials(url)
	if err != nil {
		fmt.Fprintf(j.out, "cannot tell the upstream's HEAD; the mirror's stays as it was: %v\n", err)
		return
	}
	args = append(args, "ls-remote", "--symref", "--", plain, "HEAD")
	out, err := run(ctx, j.out, j.upstreamEnv("", configEnv(creds)...), "git", args...)
	if err != nil {
		fmt.Fprintf(j.out, "cannot tell the upstream's HEAD; the mirror's stays as it was: %v\n", err)
		return
	}
	upstream := symrefHead(out)
	if upstream == "" {
		return // a detached HEAD, or a server that does not say
	}
	head, ok := mappedRef(fetch, upstream)
	if !ok || !strings.HasPrefix(head, "refs/heads/") || refs[head] == "" {
		return // the upstream's default branch is not mirrored as a branch
	}
	if cur, err := j.git(ctx, "symbolic-ref", "--quiet", "HEAD"); err == nil && strings.TrimSpace(cur) == head {
		return
	}
	if _, err := j.git(ctx, "symbolic-ref", "HEAD", head); err != nil {
		fmt.Fprintf(j.out, "cannot point the mirror's HEAD at %s: %v\n", head, err)
	}
}

// symrefHead reads the ref that HEAD names from the output of git
// ls-remote --symref, "" if it names none.
func symrefHead(out string) string {
	for _, line := range strings.Split(out, "\n") {
		target, name, ok := strings.Cut(line, "\t")
		if ref, isSym := strings.CutPrefix(target, "ref: "); ok && isSym && name == "HEAD" {
			return ref
		}
	}
	return ""
}

// mappedRef is the name under which the fetch refspecs put the upstream
// ref, which is a full name; a source without "refs/" is a branch, as
// lorry's refspecs are written.
func mappedRef(fetch []string, ref string) (string, bool) {
	for _, f := range fetch {
		src, dst, _ := strings.Cut(strings.TrimPrefix(f, "+"), ":")
		if !strings.HasPrefix(src, "refs/") {
			src = "refs/heads/" + src
		}
		prefix, suffix, wild := strings.Cut(src, "*")
		if !wild {
			if src == ref {
				return dst, true
			}
			continue
		}
		if refMatches(src, ref) {
			middle := ref[len(prefix) : len(ref)-len(suffix)]
			return strings.Replace(dst, "*", middle, 1), true
		}
	}
	return "", false
}

func (j *job) cloneGit(ctx context.Context, args []string, url string) error {
	tmp := j.gitDir + ".clone"
	os.RemoveAll(tmp)
	defer os.RemoveAll(tmp)
	fmt.Fprintf(j.out, "cloning %s\n", redact.URLs(url))
	plain, creds, err := credentials(url)
	if err != nil {
		return err
	}
	args = append(args, "clone", "--bare", "--progress", "--", plain, tmp)
	if _, err := run(ctx, j.out, j.upstreamEnv("", configEnv(creds)...), "git", args...); err != nil {
		return fmt.Errorf("clone %s: %w", redact.URLs(url), withOwnershipHint(err))
	}
	// Later runs fetch by URL, so the clone's remote is not kept.
	if _, err := j.gitIn(ctx, tmp, "config", "--remove-section", "remote.origin"); err != nil {
		return err
	}
	return j.replaceRepo(ctx, tmp)
}

// gitRefspecs turns a spec's refspecs into those that fetch into the mirror
// under the same names, and those that push the mirror downstream. Both are
// forced: a branch force-pushed upstream is force-pushed downstream.
func gitRefspecs(specs []string) (fetch, push []string, err error) {
	if len(specs) == 0 {
		return allRefs, allRefs, nil
	}
	for _, s := range specs {
		src, dst, hasDst := strings.Cut(strings.TrimPrefix(s, "+"), ":")
		if !hasDst {
			dst = src
		}
		if src == "" || dst == "" || strings.HasPrefix(src, "^") {
			return nil, nil, fmt.Errorf("refspec %q is not usable for a mirror", s)
		}
		if !strings.HasPrefix(dst, "refs/") {
			dst = "refs/heads/" + dst
		}
		fetch = append(fetch, "+"+src+":"+dst)
		push = append(push, "+"+dst+":"+dst)
	}
	return fetch, push, nil
}

// anyMatches tells whether a ref of the mirror is named by the destination
// of one of the push refspecs.
func anyMatches(refs map[string]string, push []string) bool {
	for _, p := range push {
		_, dst, _ := strings.Cut(strings.TrimPrefix(p, "+"), ":")
		for name := range refs {
			if refMatches(dst, name) {
				return true
			}
		}
	}
	return false
}

// refMatches matches a ref name against a refspec side, whose one "*" may
// stand for anything, slashes included.
func refMatches(pattern, name string) bool {
	prefix, suffix, wild := strings.Cut(pattern, "*")
	if !wild {
		return pattern == name
	}
	return len(name) >= len(prefix)+len(suffix) && strings.HasPrefix(name, prefix) && strings.HasSuffix(name, suffix)
}

// dubiousOwnership is what git says when it refuses a repository of this
// machine that another user owns.
const dubiousOwnership = "detected dubious ownership"

// withOwnershipHint adds to err, when git refused a local upstream that
// another user owns, how the admin lets lorry read it. git's own hint
// names "git config --global", which is not where lorry's git looks.
func withOwnershipHint(err error) error {
	if !strings.Contains(err.Error(), dubiousOwnership) {
		return err
	}
	return fmt.Errorf("%w; to mirror a repository of another user, name it in safe.directory in lorry's git configuration (lorry --git-config, the minion's git-config, or else .gitconfig in the home of the user lorry runs as)", err)
}
