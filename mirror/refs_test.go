package mirror

import (
	"reflect"
	"testing"

	"lorrycontroller.dev/lc/gittest"
	"lorrycontroller.dev/lc/wire"
)

// A run's ref changes are the downstream's: what it had before the push
// against what it has after, with full object ids, leaving out refs that
// the push does not name.
func TestRefChangesDownstream(t *testing.T) {
	up := newUpstream(t, false)
	first := up.git("rev-parse", "HEAD")
	up.git("branch", "dev")
	up.git("branch", "gone")
	down := downstream(t)
	opts := Options{WorkingArea: t.TempDir(), PushURL: down}
	spec := gitSpec("delta/project", map[string]any{"url": up.url, "prune": true})

	res := runSpec(t, spec, opts)
	want := &wire.RefChanges{Created: []wire.RefChange{
		{Ref: "refs/heads/dev", New: first}, {Ref: "refs/heads/gone", New: first}, {Ref: "refs/heads/main", New: first},
	}}
	if res.Err != nil || !reflect.DeepEqual(res.Refs, want) {
		t.Fatalf("first run: got %v, refs %+v; want refs %+v", res.Err, res.Refs, want)
	}

	second := up.commit("second")
	up.git("tag", "v1")
	up.git("branch", "-D", "gone")
	// A ref of the downstream's own, which the run neither pushes nor
	// prunes, and a branch someone pushed there, which the run does.
	gittest.Git(t, down, nil, "update-ref", "refs/merge-requests/1/head", first)
	gittest.Git(t, down, nil, "update-ref", "refs/heads/stray", first)
	res = runSpec(t, spec, opts)
	want = &wire.RefChanges{
		Created: []wire.RefChange{{Ref: "refs/tags/v1", New: second}},
		Updated: []wire.RefChange{{Ref: "refs/heads/main", Old: first, New: second}},
		Deleted: []wire.RefChange{{Ref: "refs/heads/gone", Old: first}, {Ref: "refs/heads/stray", Old: first}},
	}
	if res.Err != nil || !reflect.DeepEqual(res.Refs, want) {
		t.Fatalf("second run: got %v, refs %+v; want refs %+v", res.Err, res.Refs, want)
	}

	// The mirror has all of it already; a downstream that lost a branch
	// gets it back, and that is the change reported.
	gittest.Git(t, down, nil, "update-ref", "-d", "refs/heads/dev")
	res = runSpec(t, spec, opts)
	want = &wire.RefChanges{Created: []wire.RefChange{{Ref: "refs/heads/dev", New: first}}}
	if res.Err != nil || !reflect.DeepEqual(res.Refs, want) {
		t.Fatalf("third run: got %v, refs %+v; want refs %+v", res.Err, res.Refs, want)
	}
}

// With nothing pushed, the changes are the mirror's.
func TestRefChangesPullOnly(t *testing.T) {
	up := newUpstream(t, false)
	first := up.git("rev-parse", "HEAD")
	opts := Options{WorkingArea: t.TempDir(), PullOnly: true}
	spec := gitSpec("delta/project", map[string]any{"url": up.url})
	if res := runSpec(t, spec, opts); res.Err != nil {
		t.Fatal(res.Err)
	}
	second := up.commit("second")
	res := runSpec(t, spec, opts)
	want := &wire.RefChanges{Updated: []wire.RefChange{{Ref: "refs/heads/main", Old: first, New: second}}}
	if res.Err != nil || !reflect.DeepEqual(res.Refs, want) {
		t.Fatalf("got %v, refs %+v; want refs %+v", res.Err, res.Refs, want)
	}
	res = runSpec(t, spec, opts)
	if want := (&wire.RefChanges{}); res.Err != nil || !reflect.DeepEqual(res.Refs, want) {
		t.Fatalf("nothing new: got %v, refs %+v; want refs %+v", res.Err, res.Refs, want)
	}
}
