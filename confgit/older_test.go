package confgit

import (
	"strings"
	"testing"
)

// TestOlder: a commit is older than each of its descendants, through a
// merge's every parent, and than nothing else: not itself, not a commit
// beside it or on a history of its own, not one the clone does not hold.
func TestOlder(t *testing.T) {
	repo := newTestRepo(t, "master")
	c1 := repo.commit(map[string]string{"a": "1"})
	c2 := repo.commit(map[string]string{"a": "2"})
	c3 := repo.commit(map[string]string{"a": "3"})
	runGit(t, repo.dir, nil, "checkout", "-q", "-b", "side", c1)
	side := repo.commit(map[string]string{"b": "1"})
	runGit(t, repo.dir, nil, "checkout", "-q", "master")
	runGit(t, repo.dir, nil, "merge", "-q", "--no-edit", "side")
	merge := runGit(t, repo.dir, nil, "rev-parse", "HEAD")
	runGit(t, repo.dir, nil, "checkout", "-q", "--orphan", "forced")
	forced := repo.commit(map[string]string{"c": "1"})
	missing := strings.Repeat("0", 39) + "1"

	src := &Source{Dir: repo.dir}
	tests := []struct {
		name          string
		commit, newer string
		want          bool
	}{
		{name: "parent", commit: c2, newer: c3, want: true},
		{name: "grandparent", commit: c1, newer: c3, want: true},
		{name: "first parent of a merge", commit: c3, newer: merge, want: true},
		{name: "second parent of a merge", commit: side, newer: merge, want: true},
		{name: "root through the second parent", commit: c1, newer: merge, want: true},
		{name: "itself", commit: c3, newer: c3},
		{name: "child", commit: c3, newer: c2},
		{name: "merge and its parent", commit: merge, newer: side},
		{name: "beside", commit: side, newer: c3},
		{name: "beside, the other way", commit: c3, newer: side},
		{name: "another history", commit: c1, newer: forced},
		{name: "another history, the other way", commit: forced, newer: c3},
		{name: "commit not in the clone", commit: missing, newer: c3},
		{name: "newer not in the clone", commit: c1, newer: missing},
		{name: "not a commit id", commit: "c1", newer: c3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := src.Older(tc.commit, tc.newer)
			if err != nil || got != tc.want {
				t.Errorf("Older(%s, %s) = %v, %v; want %v", tc.commit, tc.newer, got, err, tc.want)
			}
		})
	}
}
