package upstream

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"lorrycontroller.dev/lc/confgit"
)

// GeneratedLorry is the lorry made for one repository of an Upstream
// Host.
type GeneratedLorry struct {
	Path     string // lorry path on the Downstream Host
	FromPath string // the repository's path on the Upstream Host
	// Text is {Path: {"type": "git", "url": ...}} as compact JSON with
	// sorted keys, like the Text of a lorry from a .lorry file, so that an
	// unchanged repository gives an unchanged lorry. The URL may carry a
	// token (see "clone-with-token"): show it only through redact.URLs.
	Text          string
	Description   string
	DefaultBranch string
}

// Generate makes the lorries of a host section from its listed
// repositories. Each repository path is mapped through the section's
// prefixmap, whose keys are upstream path prefixes (whole segments; the
// longest match wins; "" matches every path) and whose values replace
// them; a repository under no prefix is left out, and so is one whose
// upstream path matches an "ignore" glob. The lorries are sorted by Path.
//
// The second result says, one line each, why any other repository made
// no lorry: under no prefix, an invalid lorry path, no clone URL, or a
// lorry path already taken by a repository earlier in upstream path order
// (which keeps it). Ignored repositories are not mentioned: the admin
// asked for that.
func Generate(h confgit.Host, repos []Repo) ([]GeneratedLorry, []string) {
	prefixes := sortedPrefixes(h.Prefixmap)
	spec := gitSpec{Type: "git"}
	if h.SkipCertificateCheck {
		spec.CheckCertificates = new(bool)
	}

	sorted := slices.Clone(repos)
	slices.SortStableFunc(sorted, func(a, b Repo) int { return strings.Compare(a.Path, b.Path) })

	var out []GeneratedLorry
	var skipped []string
	from := map[string]string{} // lorry path -> upstream path that took it
	for _, r := range sorted {
		if ignored(h.Ignore, r.Path) {
			continue
		}
		path, ok := mapPrefix(prefixes, h.Prefixmap, r.Path)
		if !ok {
			skipped = append(skipped, fmt.Sprintf("%q: under no prefix of \"prefixmap\"", r.Path))
			continue
		}
		if err := confgit.ValidatePath(path); err != nil {
			skipped = append(skipped, fmt.Sprintf("%q: lorry path %q: %v", r.Path, path, err))
			continue
		}
		if r.CloneURL == "" {
			skipped = append(skipped, fmt.Sprintf("%q: the host gave no clone URL", r.Path))
			continue
		}
		if first, dup := from[path]; dup {
			skipped = append(skipped, fmt.Sprintf("%q: lorry path %q is already generated from %q", r.Path, path, first))
			continue
		}
		spec.URL = r.CloneURL
		text, err := specText(path, spec)
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("%q: %v", r.Path, err))
			continue
		}
		from[path] = r.Path
		out = append(out, GeneratedLorry{
			Path:          path,
			FromPath:      r.Path,
			Text:          text,
			Description:   r.Description,
			DefaultBranch: r.DefaultBranch,
		})
	}
	slices.SortFunc(out, func(a, b GeneratedLorry) int { return strings.Compare(a.Path, b.Path) })
	return out, skipped
}

// gitSpec is the spec of a generated lorry. Its fields are in key order,
// so that it encodes as a map of the same keys would, as confgit encodes
// the specs of .lorry files.
type gitSpec struct {
	CheckCertificates *bool  `json:"check-certificates,omitempty"`
	Type              string `json:"type"`
	URL               string `json:"url"`
}

// specText encodes {path: spec}.
func specText(path string, spec gitSpec) (string, error) {
	key, err := json.Marshal(path)
	if err != nil {
		return "", err
	}
	val, err := json.Marshal(spec)
	if err != nil {
		return "", err
	}
	return "{" + string(key) + ":" + string(val) + "}", nil
}

// sortedPrefixes returns the prefixmap's keys longest first, so the first
// that matches is the longest; ties are broken by name so the result does
// not depend on map order.
func sortedPrefixes(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		ta, tb := strings.Trim(a, "/"), strings.Trim(b, "/")
		return cmp.Or(cmp.Compare(len(tb), len(ta)), strings.Compare(ta, tb), strings.Compare(a, b))
	})
	return keys
}

// mapPrefix maps an upstream path to a lorry path. Prefixes match whole
// segments, so "gnome" covers "gnome/glib" but not "gnomeish/x"; a
// trailing slash in a key means the same as none.
func mapPrefix(keys []string, m map[string]string, p string) (string, bool) {
	for _, k := range keys {
		pre := strings.Trim(k, "/")
		dst := strings.TrimRight(m[k], "/")
		switch {
		case pre == "":
			return dst + "/" + p, true
		case p == pre:
			return dst, true
		case strings.HasPrefix(p, pre+"/"):
			return dst + p[len(pre):], true
		}
	}
	return "", false
}

func ignored(globs []string, p string) bool {
	for _, g := range globs {
		if confgit.MatchGlob(g, p) {
			return true
		}
	}
	return false
}
