package lorryspec

import (
	"errors"
	"fmt"
	"path"
	"reflect"
	"strings"
)

// Git mirrors a git repository.
type Git struct {
	URL string `json:"url"`
	// Refspecs to fetch and push; empty means all branches and tags.
	Refspecs []string `json:"refspecs"`
	// CheckCertificates false turns TLS verification off for this spec.
	CheckCertificates *bool `json:"check-certificates"`
	// Prune deletes downstream the branches and tags deleted upstream.
	Prune bool `json:"prune"`
	// LFS fetches every Git LFS object of the mirrored refs and pushes
	// them downstream.
	LFS bool `json:"lfs"`
}

// Archive imports a tarball, zip or gzip file as a commit.
type Archive struct {
	URL               string `json:"url"`
	Branch            string `json:"branch"` // default master
	Strip             int    `json:"strip"`  // leading path components to drop
	CheckCertificates *bool  `json:"check-certificates"`
}

// RawFile imports files, each to its destination, as a commit.
type RawFile struct {
	URLs              []RawFileURL `json:"urls"`
	Branch            string       `json:"branch"` // default master
	CheckCertificates *bool        `json:"check-certificates"`
}

// RawFileURL is one file of a raw-file spec.
type RawFileURL struct {
	URL         string `json:"url"`
	Destination string `json:"destination"` // a directory in the tree; "" for the root
}

// Svn converts a Subversion repository.
type Svn struct {
	URL string `json:"url"`
	// Layout is "standard" or an object naming "trunk", "branches" and
	// "tags"; empty means standard.
	Layout any `json:"layout"`
}

// SvnLayout is where trunk, branches and tags live in an svn repository.
type SvnLayout struct {
	Trunk, Branches, Tags string
}

// Hg converts a Mercurial repository.
type Hg struct {
	URL string `json:"url"`
}

// Bzr converts a Bazaar repository: URL, or Branches mapping branch names
// to URLs.
type Bzr struct {
	URL      string            `json:"url"`
	Branches map[string]string `json:"branches"`
}

// Cvs converts a module of a CVS repository.
type Cvs struct {
	URL    string `json:"url"`
	Module string `json:"module"`
}

func needURL(typ, url string) error {
	if url == "" {
		return keyError("url", fmt.Errorf(`%s spec needs a "url" string`, typ))
	}
	return nil
}

func (g *Git) check(typ string) error { return needURL(typ, g.URL) }
func (a *Archive) check(typ string) error {
	return errors.Join(needURL(typ, a.URL), checkStrip(a.Strip))
}
func (h *Hg) check(typ string) error { return needURL(typ, h.URL) }

func checkStrip(n int) error {
	if n < 0 {
		return keyError("strip", fmt.Errorf(`"strip" must not be negative, not %d`, n))
	}
	return nil
}

func (r *RawFile) check(typ string) error {
	if len(r.URLs) == 0 {
		return keyError("urls", errors.New(`raw-file spec needs "urls", a list of {"url", "destination"}`))
	}
	for i, u := range r.URLs {
		if u.URL == "" {
			return keyError("urls", fmt.Errorf(`"urls" item [%d] needs a "url" string`, i))
		}
		if err := checkRelative(u.Destination); err != nil {
			return keyError("urls", fmt.Errorf(`"urls" item [%d]: "destination" %w`, i, err))
		}
	}
	return nil
}

// checkRelative refuses a path that could leave the tree it names a place
// in.
func checkRelative(p string) error {
	if p == "" {
		return nil
	}
	if strings.HasPrefix(p, "/") || strings.Contains(p, "\\") {
		return fmt.Errorf("%q must be a relative path", p)
	}
	for _, seg := range strings.Split(path.Clean(p), "/") {
		if seg == ".." || seg == ".git" {
			return fmt.Errorf("%q must stay inside the tree", p)
		}
	}
	return nil
}

func (s *Svn) check(typ string) error {
	if err := needURL(typ, s.URL); err != nil {
		return err
	}
	_, err := s.ParsedLayout()
	return keyError("layout", err)
}

// ParsedLayout returns where trunk, branches and tags are.
func (s *Svn) ParsedLayout() (SvnLayout, error) {
	standard := SvnLayout{Trunk: "trunk", Branches: "branches", Tags: "tags"}
	switch l := s.Layout.(type) {
	case nil:
		return standard, nil
	case string:
		if l == "standard" {
			return standard, nil
		}
		return SvnLayout{}, fmt.Errorf(`"layout" must be "standard" or an object, not %q`, l)
	case map[string]any:
		var out SvnLayout
		for key, dst := range map[string]*string{"trunk": &out.Trunk, "branches": &out.Branches, "tags": &out.Tags} {
			v, ok := l[key]
			if !ok {
				continue
			}
			s, ok := v.(string)
			if !ok {
				return SvnLayout{}, fmt.Errorf(`"layout" key %q must be a string, not %s`, key, KindOf(v))
			}
			// The original layouts wrote "branches/*"; the glob is implied.
			*dst = strings.TrimSuffix(strings.TrimSuffix(s, "/*"), "/")
		}
		if out.Trunk == "" {
			return SvnLayout{}, errors.New(`"layout" needs a "trunk"`)
		}
		return out, nil
	default:
		return SvnLayout{}, fmt.Errorf(`"layout" must be "standard" or an object, not %s`, KindOf(l))
	}
}

func (b *Bzr) check(typ string) error {
	if b.URL == "" && len(b.Branches) == 0 {
		return keyError("url", errors.New(`bzr spec needs a "url" string or "branches", an object of branch names to URLs`))
	}
	for name, url := range b.Branches {
		if name == "" || url == "" {
			return keyError("branches", fmt.Errorf(`"branches" entry %q needs a name and a URL`, name))
		}
	}
	return nil
}

func (c *Cvs) check(typ string) error {
	if err := needURL(typ, c.URL); err != nil {
		return err
	}
	if c.Module == "" {
		return keyError("module", errors.New(`cvs spec needs a "module" string`))
	}
	return nil
}

// kindOfType names a Go kind the way KindOf names JSON values.
func kindOfType(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int64, reflect.Float64:
		return "a number"
	case reflect.Slice:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	default:
		return k.String()
	}
}
