package mirror

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"lorrycontroller.dev/lc/redact"
	"lorrycontroller.dev/lc/wire"
)

// refChanges compares the refs before and after, by name, keeping those
// for which keep is true: what a run did where an operator looks, in the
// downstream, or in the mirror with PullOnly.
func refChanges(before, after map[string]string, keep func(string) bool) *wire.RefChanges {
	c := &wire.RefChanges{}
	for name, id := range after {
		if !keep(name) {
			continue
		}
		switch old, ok := before[name]; {
		case !ok:
			c.Created = append(c.Created, wire.RefChange{Ref: name, New: id})
		case old != id:
			c.Updated = append(c.Updated, wire.RefChange{Ref: name, Old: old, New: id})
		}
	}
	for name, id := range before {
		if _, ok := after[name]; !ok && keep(name) {
			c.Deleted = append(c.Deleted, wire.RefChange{Ref: name, Old: id})
		}
	}
	for _, l := range [][]wire.RefChange{c.Created, c.Updated, c.Deleted} {
		slices.SortFunc(l, func(a, b wire.RefChange) int { return strings.Compare(a.Ref, b.Ref) })
	}
	return c
}

// pushedBy makes a keep function for refChanges that keeps the refs that
// the push refspecs name downstream: other refs of the downstream, such as
// a forge's merge request refs, are none of the run's doing.
func pushedBy(refspecs []string) func(string) bool {
	return func(name string) bool {
		for _, p := range refspecs {
			_, dst, _ := strings.Cut(strings.TrimPrefix(p, "+"), ":")
			if refMatches(dst, name) {
				return true
			}
		}
		return false
	}
}

func keepAll(string) bool { return true }

// remoteRefs maps every ref of the repository at url to its object id, as
// git ls-remote lists them (peeled tags and HEAD left out).
func (j *job) remoteRefs(ctx context.Context, url string) (map[string]string, error) {
	plain, creds, err := credentials(url)
	if err != nil {
		return nil, err
	}
	args := append([]string{"ls-remote", "--refs"}, trustLocal(plain, "upload-pack")...)
	out, err := run(ctx, j.out, j.gitEnv(j.gitDir, configEnv(creds)), "git", append(args, "--", plain)...)
	if err != nil {
		return nil, fmt.Errorf("list the refs of %s: %w", redact.URLs(url), err)
	}
	refs := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if id, name, ok := strings.Cut(line, "\t"); ok {
			refs[name] = id
		}
	}
	return refs, nil
}
